"""Retry Policies CRUD (`default` is the built-in policy: 3 attempts, fixed 300 s)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from edgecron import clock
from edgecron.api.context import current_app_id
from edgecron.api.idempotency import IdempotencyKey, run_once
from edgecron.api.mappers import retry_policies as mappers
from edgecron.api.pagination import Cursor, Limit, decode_cursor, encode_cursor
from edgecron.api.responses import docs
from edgecron.schemas.retry_policies import (
    RetryPolicyCreate,
    RetryPolicyOut,
    RetryPolicyPage,
    RetryPolicyUpdate,
)
from edgecron.services import retry_policies as service

router = Router()
TAGS = ["Retry Policies"]


@router.post(
    "/v1/retry-policies", summary="Create a Retry Policy", tags=TAGS, responses=docs(201, RetryPolicyOut, 409)
)
def create_policy(
    body: RetryPolicyCreate, idempotency_key: IdempotencyKey = None
) -> Response[RetryPolicyOut]:
    app_id = current_app_id()

    def create(policy_id: str) -> RetryPolicyOut:
        return mappers.retry_policy_out(service.create(app_id, body, clock.to_ms(clock.now()), policy_id))

    def recover(policy_id: str) -> RetryPolicyOut | None:
        policy = service.find(app_id, policy_id, consistent=True)
        return None if policy is None else mappers.retry_policy_out(policy)

    return run_once(app_id, "retry-policies", idempotency_key, body.model_dump(), "rp", 201, create, recover)


@router.get(
    "/v1/retry-policies", summary="List Retry Policies", tags=TAGS, responses=docs(200, RetryPolicyPage)
)
def list_policies(limit: Limit = 20, cursor: Cursor = None) -> RetryPolicyPage:
    app_id = current_app_id()
    page = service.list_page(app_id, limit, decode_cursor(cursor, "app_id", app_id))
    return RetryPolicyPage(
        data=[mappers.retry_policy_out(p) for p in page.items], next_cursor=encode_cursor(page.last_key)
    )


@router.get(
    "/v1/retry-policies/<policy_id>",
    summary="Get a Retry Policy",
    tags=TAGS,
    responses=docs(200, RetryPolicyOut, 404),
)
def get_policy(policy_id: str) -> RetryPolicyOut:
    return mappers.retry_policy_out(service.get(current_app_id(), policy_id))


@router.patch(
    "/v1/retry-policies/<policy_id>",
    summary="Update a Retry Policy",
    tags=TAGS,
    responses=docs(200, RetryPolicyOut, 404, 409),
)
def update_policy(policy_id: str, body: RetryPolicyUpdate) -> RetryPolicyOut:
    policy = service.update(current_app_id(), policy_id, body, clock.to_ms(clock.now()))
    return mappers.retry_policy_out(policy)


@router.delete(
    "/v1/retry-policies/<policy_id>",
    summary="Delete a Retry Policy",
    tags=TAGS,
    responses=docs(204, None, 404, 409),
)
def delete_policy(policy_id: str) -> Response[str]:
    service.delete(current_app_id(), policy_id)
    return Response(status_code=204, body="")
