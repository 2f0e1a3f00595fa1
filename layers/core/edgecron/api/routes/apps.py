"""Apps (admin key): `POST /v1/apps` creates an App and its first API key; `PUT /v1/apps/{id}/quota`
sets or clears its monthly quota of billable triggers; `PUT /v1/apps/{id}/rate-limit` its request rate."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel, Field

from edgecron import clock
from edgecron.api import mappers
from edgecron.api.responses import docs
from edgecron.schemas.apps import AppCreate, AppCreated, AppOut
from edgecron.schemas.common import Strict
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
