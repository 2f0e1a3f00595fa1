"""Retry Policies CRUD (`default` is the built-in policy: 3 attempts, fixed 300 s)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from edgecron import clock
from edgecron.api.context import current_app_id
from edgecron.api.idempotency import Answer, IdempotencyKey, run_once
from edgecron.api.pagination import Cursor, Limit, decode_cursor, page_body
from edgecron.api.responses import docs, json_response
from edgecron.data import retry_policies as data
from edgecron.schemas.retry_policies import (
    RetryPolicyCreate,
    RetryPolicyOut,
    RetryPolicyPage,
    RetryPolicyUpdate,
)
from edgecron.services import retry_policies as service
from edgecron.services.views import retry_policy_view

router = Router()
TAGS = ["Retry Policies"]


@router.post(
    "/v1/retry-policies", summary="Create a Retry Policy", tags=TAGS, responses=docs(201, RetryPolicyOut, 409)
)
def create_policy(body: RetryPolicyCreate, idempotency_key: IdempotencyKey = None) -> Response[str]:
    app_id = current_app_id()

    def create(policy_id: str) -> Answer:
        return 201, retry_policy_view(service.create(app_id, body, clock.to_ms(clock.now()), policy_id))

    def recover(policy_id: str) -> Answer | None:
        policy = data.get(app_id, policy_id, consistent=True)
        return None if policy is None else (201, retry_policy_view(policy))

    return run_once(app_id, "retry-policies", idempotency_key, body.model_dump(), "rp", create, recover)


@router.get(
    "/v1/retry-policies", summary="List Retry Policies", tags=TAGS, responses=docs(200, RetryPolicyPage)
)
def list_policies(limit: Limit = 20, cursor: Cursor = None) -> Response[str]:
    app_id = current_app_id()
    page = data.list_page(app_id, limit, decode_cursor(cursor, "app_id", app_id))
    return json_response(200, page_body([retry_policy_view(p) for p in page.items], page.last_key))


@router.get(
    "/v1/retry-policies/<policy_id>",
    summary="Get a Retry Policy",
    tags=TAGS,
    responses=docs(200, RetryPolicyOut, 404),
)
def get_policy(policy_id: str) -> Response[str]:
    return json_response(200, retry_policy_view(service.get(current_app_id(), policy_id)))


@router.patch(
    "/v1/retry-policies/<policy_id>",
    summary="Update a Retry Policy",
    tags=TAGS,
    responses=docs(200, RetryPolicyOut, 404, 409),
)
def update_policy(policy_id: str, body: RetryPolicyUpdate) -> Response[str]:
    policy = service.update(current_app_id(), policy_id, body, clock.to_ms(clock.now()))
    return json_response(200, retry_policy_view(policy))


@router.delete(
    "/v1/retry-policies/<policy_id>",
    summary="Delete a Retry Policy",
    tags=TAGS,
    responses=docs(204, None, 404, 409),
)
def delete_policy(policy_id: str) -> Response[str]:
    service.delete(current_app_id(), policy_id)
    return Response(status_code=204, body="")
