"""Task Runs (direct runs and any run's state and attempts) and dead letters."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from edgecron import clock
from edgecron.api.context import bulk_deadline, current_app_id
from edgecron.api.idempotency import IdempotencyKey, run_once
from edgecron.api.mappers import task_runs as mappers
from edgecron.api.pagination import Cursor, Limit, decode_cursor, encode_cursor
from edgecron.api.responses import docs
from edgecron.domain.vocabulary import ErrorKind, RunStatus, Source
from edgecron.schemas.common import Id, Rfc3339
from edgecron.schemas.task_runs import (
    AttemptPage,
    DeadLetterFilter,
    ReplayResult,
    TaskRunCreate,
    TaskRunOut,
    TaskRunPage,
)
from edgecron.services import task_runs as service

router = Router()
TAGS = ["Task Runs"]
DL_TAGS = ["Dead Letters"]


def _now_ms() -> int:
    return clock.to_ms(clock.now())


@router.post(
    "/v1/task-runs",
    summary="Create a direct Task Run (now, at a time, or after a delay)",
    tags=TAGS,
    responses=docs(201, TaskRunOut, 404, 409, 413, 429),
)
def create_run(body: TaskRunCreate, idempotency_key: IdempotencyKey = None) -> Response[TaskRunOut]:
    app_id = current_app_id()

    def create(run_id: str) -> TaskRunOut:
        return mappers.task_run_out(service.create_direct(app_id, body, clock.now(), run_id))

    def recover(run_id: str) -> TaskRunOut | None:
        run = service.recover_direct(app_id, run_id, _now_ms())
        return None if run is None else mappers.task_run_out(run)

    return run_once(
        app_id, "task-runs", idempotency_key, body.model_dump(mode="json"), "run", 201, create, recover
    )


@router.get(
    "/v1/task-runs", summary="List Task Runs, newest first", tags=TAGS, responses=docs(200, TaskRunPage)
)
def list_runs(
    limit: Limit = 20,
    cursor: Cursor = None,
    status: Annotated[RunStatus | None, Query()] = None,
    endpoint_id: Annotated[Id | None, Query()] = None,
    source: Annotated[Source | None, Query()] = None,
) -> TaskRunPage:
    app_id = current_app_id()
    page = service.list_page(
        app_id,
        limit,
        decode_cursor(cursor, "app_id", app_id),
        _now_ms(),
        status=status,
        endpoint_id=endpoint_id,
        source=source,
    )
    return TaskRunPage(
        data=[mappers.task_run_summary(r) for r in page.items], next_cursor=encode_cursor(page.last_key)
    )


@router.get(
    "/v1/task-runs/<run_id>", summary="Get a Task Run", tags=TAGS, responses=docs(200, TaskRunOut, 404)
)
def get_run(run_id: str) -> TaskRunOut:
    return mappers.task_run_out(service.get(current_app_id(), run_id, _now_ms()))


@router.post(
    "/v1/task-runs/<run_id>/cancel",
    summary="Cancel a pending or retry_scheduled Task Run",
    tags=TAGS,
    responses=docs(200, TaskRunOut, 404, 409),
)
def cancel_run(run_id: str) -> TaskRunOut:
    return mappers.task_run_out(service.cancel(current_app_id(), run_id, _now_ms()))


@router.get(
    "/v1/task-runs/<run_id>/attempts",
    summary="A Task Run's Delivery Attempts, oldest first",
    tags=TAGS,
    responses=docs(200, AttemptPage, 404),
)
def list_attempts(run_id: str, limit: Limit = 50, cursor: Cursor = None) -> AttemptPage:
    page = service.attempts_page(
        current_app_id(), run_id, limit, decode_cursor(cursor, "run_id", run_id), _now_ms()
    )
    return AttemptPage(
        data=[mappers.attempt_out(a) for a in page.items], next_cursor=encode_cursor(page.last_key)
    )


@router.get(
    "/v1/dead-letters",
    summary="List dead letters, newest first",
    tags=DL_TAGS,
    responses=docs(200, TaskRunPage),
)
def list_dead_letters(
    limit: Limit = 20,
    cursor: Cursor = None,
    endpoint_id: Annotated[Id | None, Query()] = None,
    since: Annotated[Rfc3339 | None, Query()] = None,
    until: Annotated[Rfc3339 | None, Query()] = None,
    error_kind: Annotated[ErrorKind | None, Query()] = None,
) -> TaskRunPage:
    app_id = current_app_id()
    filters = DeadLetterFilter(endpoint_id=endpoint_id, since=since, until=until, error_kind=error_kind)
    page = service.dead_letters(app_id, filters, limit, decode_cursor(cursor, "dl_app_id", app_id), _now_ms())
    return TaskRunPage(
        data=[mappers.task_run_summary(r) for r in page.items], next_cursor=encode_cursor(page.last_key)
    )


@router.post(
    "/v1/dead-letters/<run_id>/replay",
    summary="Replay one dead letter (a new attempt series)",
    tags=DL_TAGS,
    responses=docs(200, TaskRunOut, 404, 409),
)
def replay_one(run_id: str) -> TaskRunOut:
    return mappers.task_run_out(service.replay(current_app_id(), run_id, _now_ms()))


@router.post(
    "/v1/dead-letters/replay",
    summary="Replay dead letters matching a filter (bulk)",
    description="Replays matching dead letters oldest first, at most `limit` per call, and stops "
    "early when the call has worked for a few seconds, so it answers well inside the function's "
    "timeout whatever is stored. Call again with `cursor` set to `next_cursor` while `has_more` is true.",
    tags=DL_TAGS,
    responses=docs(200, ReplayResult),
)
def replay_bulk(body: DeadLetterFilter) -> ReplayResult:
    app_id = current_app_id()
    cursor = decode_cursor(body.cursor, "dl_app_id", app_id)
    deadline = bulk_deadline(service.BULK_WORK_MS)
    return mappers.replay_result(service.replay_bulk(app_id, body, _now_ms(), cursor, deadline))
