"""A Task Run's request as its attempts send it, credentials redacted (the console's run inspection)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel, Field

from edgecron import clock
from edgecron.api.context import current_app_id
from edgecron.api.responses import docs
from edgecron.services import run_requests as service

router = Router()


class RunRequestOut(BaseModel):
    method: str
    url: str
    headers: dict[str, str] = Field(
        description="as sent, with credentials (webhook-signature, authorization, tokens, keys, cookies) "
        "shown as [redacted]; webhook-timestamp and edgecron-attempt differ per attempt"
    )
    body_bytes: int | None = Field(description="size of the body (the payload as compact JSON); null: none")


@router.get(
    "/v1/task-runs/<run_id>/request",
    summary="The HTTP request a Task Run's attempts send, credentials redacted",
    tags=["Task Runs"],
    responses=docs(200, RunRequestOut, 404),
)
def run_request(run_id: str) -> RunRequestOut:
    view = service.request_of(current_app_id(), run_id, clock.to_ms(clock.now()))
    return RunRequestOut(method=view.method, url=view.url, headers=view.headers, body_bytes=view.body_bytes)
