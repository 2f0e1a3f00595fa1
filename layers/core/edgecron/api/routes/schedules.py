"""Schedules and their run history (Fires)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from edgecron import clock
from edgecron.api.context import current_app_id
from edgecron.api.idempotency import IdempotencyKey, run_once
from edgecron.api.mappers import schedules as mappers
from edgecron.api.pagination import Cursor, Limit, decode_cursor, encode_cursor
from edgecron.api.responses import docs
from edgecron.domain.schedules import Schedule
from edgecron.schemas.schedules import (
    FireList,
    FireOut,
    PauseRequest,
    ScheduleCreate,
    ScheduleOut,
    SchedulePage,
    ScheduleUpdate,
)
from edgecron.services import schedule_history as history
from edgecron.services import schedules as service

router = Router()
TAGS = ["Schedules"]


def _out(schedule: Schedule, now: datetime, preview: int = 0) -> ScheduleOut:
    return mappers.schedule_out(history.view(schedule, now, preview))


@router.post(
    "/v1/schedules",
    summary="Create a Schedule (cron or one-time)",
    tags=TAGS,
    responses=docs(201, ScheduleOut, 404, 409, 413),
)
def create_schedule(body: ScheduleCreate, idempotency_key: IdempotencyKey = None) -> Response[ScheduleOut]:
    app_id = current_app_id()

    def create(schedule_id: str) -> ScheduleOut:
        now = clock.now()
        return _out(service.create(app_id, body, now, schedule_id), now)

    def recover(schedule_id: str) -> ScheduleOut | None:
        schedule = history.find(app_id, schedule_id, consistent=True)
        if schedule is None:
            return None
        now = clock.now()
        return _out(service.finish_create(schedule, now), now)

    return run_once(
        app_id, "schedules", idempotency_key, body.model_dump(mode="json"), "sch", 201, create, recover
    )


@router.get("/v1/schedules", summary="List Schedules", tags=TAGS, responses=docs(200, SchedulePage))
def list_schedules(limit: Limit = 20, cursor: Cursor = None) -> SchedulePage:
    app_id = current_app_id()
    page = history.list_page(app_id, limit, decode_cursor(cursor, "app_id", app_id))
    now = clock.now()
    return SchedulePage(data=[_out(s, now) for s in page.items], next_cursor=encode_cursor(page.last_key))


@router.get(
    "/v1/schedules/<schedule_id>",
    summary="Get a Schedule (with ?preview=N next fire times)",
    tags=TAGS,
    responses=docs(200, ScheduleOut, 404),
)
def get_schedule(schedule_id: str, preview: Annotated[int, Query(ge=0, le=20)] = 0) -> ScheduleOut:
    schedule = service.get(current_app_id(), schedule_id)
    return _out(schedule, clock.now(), preview)


@router.patch(
    "/v1/schedules/<schedule_id>",
    summary="Update a Schedule",
    tags=TAGS,
    responses=docs(200, ScheduleOut, 404, 409, 413),
)
def update_schedule(schedule_id: str, body: ScheduleUpdate) -> ScheduleOut:
    now = clock.now()
    return _out(service.update(current_app_id(), schedule_id, body, now), now)


@router.delete(
    "/v1/schedules/<schedule_id>",
    summary="Delete a Schedule (cancels its pending runs)",
    tags=TAGS,
    responses=docs(204, None, 404),
)
def delete_schedule(schedule_id: str) -> Response[str]:
    service.delete(current_app_id(), schedule_id, clock.now())
    return Response(status_code=204, body="")


@router.post(
    "/v1/schedules/<schedule_id>/pause",
    summary="Pause (no fire after it is delivered; cancels pending retries)",
    tags=TAGS,
    responses=docs(200, ScheduleOut, 404, 409),
)
def pause_schedule(schedule_id: str, body: PauseRequest | None = None) -> ScheduleOut:
    reason = body.reason if body is not None else None
    now = clock.now()
    return _out(service.pause(current_app_id(), schedule_id, now, reason), now)


@router.post(
    "/v1/schedules/<schedule_id>/resume",
    summary="Resume (resets the failure counter)",
    tags=TAGS,
    responses=docs(200, ScheduleOut, 404, 409),
)
def resume_schedule(schedule_id: str) -> ScheduleOut:
    now = clock.now()
    return _out(service.resume(current_app_id(), schedule_id, now), now)


@router.post(
    "/v1/schedules/<schedule_id>/trigger",
    summary="Fire once now, outside the cron times (409 when paused or ended)",
    tags=TAGS,
    responses=docs(201, FireOut, 404, 409),
)
def trigger_schedule(schedule_id: str) -> Response[FireOut]:
    app_id = current_app_id()
    now = clock.now()
    fire, runs = history.fire_with_runs(service.trigger(app_id, schedule_id, now))
    return Response(
        status_code=201,
        content_type=content_types.APPLICATION_JSON,
        body=mappers.fire_out(fire, runs, clock.to_ms(now)),
    )


@router.get(
    "/v1/schedules/<schedule_id>/fires",
    summary="Recent Fires, newest first, with their Task Runs",
    tags=TAGS,
    responses=docs(200, FireList, 404),
)
def list_fires(
    schedule_id: str,
    limit: Annotated[int, Query(ge=1, le=50, description="page size (1–50)")] = 20,
    cursor: Cursor = None,
) -> FireList:
    schedule = service.get(current_app_id(), schedule_id)
    now_ms = clock.to_ms(clock.now())
    page, runs = history.fires_page(
        schedule.schedule_id, limit, decode_cursor(cursor, "schedule_id", schedule.schedule_id), now_ms
    )
    return FireList(
        data=[mappers.fire_out(f, runs, now_ms) for f in page.items], next_cursor=encode_cursor(page.last_key)
    )
