"""Apps (admin key): `POST /v1/apps` creates an App and its first API key; `PUT /v1/apps/{id}/quota`
sets or clears its monthly quota of billable triggers."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import Field

from edgecron import clock
from edgecron.api import mappers
from edgecron.api.responses import docs
from edgecron.schemas.apps import AppCreate, AppCreated, AppOut
from edgecron.schemas.common import Strict
from edgecron.services import apps as service

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
