"""Apps (admin key): `POST /v1/apps` creates an App and its first API key; `PUT /v1/apps/{id}/quota`
sets or clears its monthly quota of billable triggers."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import Field

from edgecron import clock
from edgecron.api.responses import docs, json_response
from edgecron.data import apps
from edgecron.errors import NotFound
from edgecron.schemas.apps import AppCreate, AppCreated, AppOut
from edgecron.schemas.common import Strict
from edgecron.services.views import app_view

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
def create_app(body: AppCreate) -> Response[str]:
    app, key = apps.create_app(body.name, clock.to_ms(clock.now()), body.monthly_quota)
    return json_response(201, {"app": app_view(app), "api_key": key})


@router.put(
    "/v1/apps/<app_id>/quota",
    summary="Set or clear an App's monthly quota (admin key)",
    tags=["Apps"],
    responses=docs(200, AppOut, 401, 404),
)
def set_quota(app_id: str, body: QuotaUpdate) -> Response[str]:
    if apps.get_app(app_id) is None:
        raise NotFound(f"app {app_id} not found", "app_id")
    return json_response(200, app_view(apps.set_quota(app_id, body.monthly_quota)))
