"""Apps (admin key): `POST /v1/apps` creates an App and its first API key, `GET /v1/apps` lists
them; `PUT /v1/apps/{id}/quota` sets or clears its monthly quota of billable triggers,
`PUT /v1/apps/{id}/rate-limit` its request rate; the `/v1/apps/{id}/keys` routes list, create, rotate
and revoke its API keys."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel, Field

from edgecron import clock
from edgecron.api.mappers import apps as mappers
from edgecron.api.pagination import Cursor, Limit, decode_cursor, decode_scan_cursor, encode_cursor
from edgecron.api.responses import docs
from edgecron.schemas.apps import (
    AppCreate,
    AppCreated,
    AppOut,
    AppPage,
    KeyCreate,
    KeyCreated,
    KeyOut,
    KeyPage,
    KeyRotate,
    KeyRotated,
)
from edgecron.schemas.common import Strict
from edgecron.services import api_keys as keys
from edgecron.services import apps as service
from edgecron.services import rate_limits

router = Router()


class QuotaUpdate(Strict):
    monthly_quota: int | None = Field(
        ge=1,
        le=10**12,
        description="billable triggers per calendar month (UTC); null = unlimited",
    )


@router.post(
    "/v1/apps", summary="Create an App (admin key)", tags=["Apps"], responses=docs(201, AppCreated, 401)
)
def create_app(body: AppCreate) -> Response[AppCreated]:
    app, key = service.create(body.name, clock.to_ms(clock.now()), body.monthly_quota)
    return Response(
        status_code=201, content_type=content_types.APPLICATION_JSON, body=mappers.app_created(app, key)
    )


@router.put(
    "/v1/apps/<app_id>/quota",
    summary="Set or clear an App's monthly quota (admin key)",
    tags=["Apps"],
    responses=docs(200, AppOut, 401, 404),
)
def set_quota(app_id: str, body: QuotaUpdate) -> AppOut:
    return mappers.app_out(service.set_quota(app_id, body.monthly_quota))


class RateLimitUpdate(Strict):
    requests_per_sec: int | None = Field(
        ge=1,
        le=rate_limits.MAX_REQUESTS_PER_SEC,
        description="requests per second the App may make over every route and key; null = no rate "
        "of its own (only the HTTP API stage's throttle, shared by every App)",
    )


class RateLimitOut(BaseModel):
    app_id: str
    requests_per_sec: int | None = Field(description="the App's request rate now; null = none")


@router.put(
    "/v1/apps/<app_id>/rate-limit",
    summary="Set or clear an App's request rate (admin key)",
    description="Beyond its rate an App's requests are answered 429 with Retry-After (seconds). "
    "Takes effect at once in the container that answers, within 30 s in the others.",
    tags=["Apps"],
    responses=docs(200, RateLimitOut, 401, 404),
)
def set_rate_limit(app_id: str, body: RateLimitUpdate) -> RateLimitOut:
    app = service.set_rate_limit(app_id, body.requests_per_sec)
    return RateLimitOut(app_id=app.app_id, requests_per_sec=app.requests_per_sec)


@router.get("/v1/apps", summary="List Apps (admin key)", tags=["Apps"], responses=docs(200, AppPage, 401))
def list_apps(limit: Limit = 20, cursor: Cursor = None) -> AppPage:
    page = service.apps_page(limit, decode_scan_cursor(cursor, "app_id"))
    return AppPage(data=[mappers.app_out(a) for a in page.items], next_cursor=encode_cursor(page.last_key))


KEY_TAGS = ["API keys"]


@router.get(
    "/v1/apps/<app_id>/keys",
    summary="List an App's API keys, newest first (admin key)",
    tags=KEY_TAGS,
    responses=docs(200, KeyPage, 401, 404),
)
def list_keys(app_id: str, limit: Limit = 20, cursor: Cursor = None) -> KeyPage:
    page = keys.list_keys(app_id, limit, decode_cursor(cursor, "app_id", app_id))
    return KeyPage(data=[mappers.key_out(k) for k in page.items], next_cursor=encode_cursor(page.last_key))


@router.post(
    "/v1/apps/<app_id>/keys",
    summary="Create an API key for an App; the key is shown once (admin key)",
    tags=KEY_TAGS,
    responses=docs(201, KeyCreated, 401, 404),
)
def create_key(app_id: str, body: KeyCreate | None = None) -> Response[KeyCreated]:
    key, secret = keys.create(app_id, body.name if body else None, clock.to_ms(clock.now()))
    created = KeyCreated(key=mappers.key_out(key), api_key=secret)
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=created)


@router.post(
    "/v1/apps/<app_id>/keys/<key_id>/rotate",
    summary="Replace an API key; the old one keeps working for the grace period (admin key)",
    tags=KEY_TAGS,
    responses=docs(201, KeyRotated, 401, 404, 409),
)
def rotate_key(app_id: str, key_id: str, body: KeyRotate | None = None) -> Response[KeyRotated]:
    grace = (body or KeyRotate()).grace_period_sec
    new, secret, old = keys.rotate(app_id, key_id, grace, clock.to_ms(clock.now()))
    rotated = KeyRotated(
        key=mappers.key_out(new), api_key=secret, previous=mappers.key_out(old) if old else None
    )
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=rotated)


@router.delete(
    "/v1/apps/<app_id>/keys/<key_id>",
    summary="Revoke an API key: refused everywhere once this answers, about 10 s later (admin key)",
    tags=KEY_TAGS,
    responses=docs(200, KeyOut, 401, 404),
)
def revoke_key(app_id: str, key_id: str) -> KeyOut:
    return mappers.key_out(keys.revoke(app_id, key_id, clock.to_ms(clock.now())))
