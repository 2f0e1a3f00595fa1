"""`POST /v1/apps` (admin key): create an App and its first API key."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from edgecron import clock
from edgecron.api.responses import docs, json_response
from edgecron.data import apps
from edgecron.schemas.apps import AppCreate, AppCreated
from edgecron.services.views import app_view

router = Router()


@router.post(
    "/v1/apps", summary="Create an App (admin key)", tags=["Apps"], responses=docs(201, AppCreated, 401)
)
def create_app(body: AppCreate) -> Response[str]:
    app, key = apps.create_app(body.name, clock.to_ms(clock.now()), body.monthly_quota)
    return json_response(201, {"app": app_view(app), "api_key": key})
