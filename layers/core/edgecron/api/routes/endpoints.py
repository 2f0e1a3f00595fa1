"""Endpoints CRUD, secret rotation, and recovering what failed."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from edgecron import clock
from edgecron.api.context import bulk_deadline, current_app_id
from edgecron.api.idempotency import IdempotencyKey, run_once
from edgecron.api.mappers import endpoints as mappers
from edgecron.api.pagination import Cursor, Limit, decode_cursor, encode_cursor
from edgecron.api.responses import docs
from edgecron.schemas.endpoints import (
    EndpointCreate,
    EndpointOut,
    EndpointPage,
    EndpointUpdate,
    EndpointWithSecret,
    RecoverRequest,
    RecoverResult,
)
from edgecron.services import endpoints as service
from edgecron.services import task_runs as run_service

router = Router()
TAGS = ["Endpoints"]


@router.post(
    "/v1/endpoints", summary="Create an Endpoint", tags=TAGS, responses=docs(201, EndpointWithSecret, 409)
)
def create_endpoint(
    body: EndpointCreate, idempotency_key: IdempotencyKey = None
) -> Response[EndpointWithSecret]:
    app_id = current_app_id()

    def create(endpoint_id: str) -> EndpointWithSecret:
        endpoint, secret = service.create(app_id, body, clock.to_ms(clock.now()), endpoint_id)
        return mappers.endpoint_with_secret(endpoint, secret)

    def recover(endpoint_id: str) -> EndpointWithSecret | None:
        endpoint = service.find(app_id, endpoint_id, consistent=True)
        if endpoint is None:
            return None
        return mappers.endpoint_with_secret(endpoint, service.creation_secret(endpoint))

    return run_once(app_id, "endpoints", idempotency_key, body.model_dump(), "ep", 201, create, recover)


@router.get("/v1/endpoints", summary="List Endpoints", tags=TAGS, responses=docs(200, EndpointPage))
def list_endpoints(limit: Limit = 20, cursor: Cursor = None) -> EndpointPage:
    app_id = current_app_id()
    page = service.list_page(app_id, limit, decode_cursor(cursor, "app_id", app_id))
    return EndpointPage(
        data=[mappers.endpoint_out(e) for e in page.items], next_cursor=encode_cursor(page.last_key)
    )


@router.get(
    "/v1/endpoints/<endpoint_id>", summary="Get an Endpoint", tags=TAGS, responses=docs(200, EndpointOut, 404)
)
def get_endpoint(endpoint_id: str) -> EndpointOut:
    return mappers.endpoint_out(service.get(current_app_id(), endpoint_id))


@router.patch(
    "/v1/endpoints/<endpoint_id>",
    summary="Update an Endpoint",
    tags=TAGS,
    responses=docs(200, EndpointOut, 404, 409),
)
def update_endpoint(endpoint_id: str, body: EndpointUpdate) -> EndpointOut:
    endpoint = service.update(current_app_id(), endpoint_id, body, clock.to_ms(clock.now()))
    return mappers.endpoint_out(endpoint)


@router.delete(
    "/v1/endpoints/<endpoint_id>", summary="Delete an Endpoint", tags=TAGS, responses=docs(204, None, 404)
)
def delete_endpoint(endpoint_id: str) -> Response[str]:
    service.delete(current_app_id(), endpoint_id)
    return Response(status_code=204, body="")


@router.post(
    "/v1/endpoints/<endpoint_id>/rotate-secret",
    summary="Rotate the signing secret",
    tags=TAGS,
    responses=docs(200, EndpointWithSecret, 404, 409),
)
def rotate_secret(endpoint_id: str) -> EndpointWithSecret:
    endpoint, secret = service.rotate_secret(current_app_id(), endpoint_id, clock.to_ms(clock.now()))
    return mappers.endpoint_with_secret(endpoint, secret)


@router.post(
    "/v1/endpoints/<endpoint_id>/recover",
    summary="Re-send what failed",
    description="Every run of the Endpoint that ended failed or dead_letter between since and until is "
    "sent again as a new attempt series (its earlier attempts stay in its history). Idempotent: a run "
    "re-sent is pending again, so a second call while it waits re-sends nothing new. At most 1000 runs "
    "per call, and a call stops early when it has worked for a few seconds, so it answers well inside "
    "the function's timeout whatever is stored; call again with `cursor` set to `next_cursor` while "
    "has_more is true.",
    tags=TAGS,
    responses=docs(200, RecoverResult, 404, 409),
)
def recover(endpoint_id: str, body: RecoverRequest) -> RecoverResult:
    app_id = current_app_id()
    result = run_service.recover(
        app_id,
        endpoint_id,
        clock.to_ms(body.since),
        clock.to_ms(body.until) if body.until else None,
        clock.to_ms(clock.now()),
        decode_cursor(body.cursor, "dl_app_id", run_service.recover_partitions(app_id)),
        bulk_deadline(run_service.BULK_WORK_MS),
    )
    return mappers.recover_result(result)
