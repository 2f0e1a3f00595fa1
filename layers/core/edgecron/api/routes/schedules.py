"""Schedules and their run history (Fires)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from edgecron import clock
from edgecron.api.context import current_app_id
from edgecron.api.idempotency import Answer, IdempotencyKey, run_once
from edgecron.api.pagination import Cursor, Limit, decode_cursor, page_body
from edgecron.api.responses import docs, json_response
from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as data
from edgecron.schemas.schedules import FireList, ScheduleCreate, ScheduleOut, SchedulePage, ScheduleUpdate
from edgecron.services import schedules as service
from edgecron.services.views import fire_view, schedule_view

router = Router()
TAGS = ["Schedules"]


@router.post(
    "/v1/schedules",
    summary="Create a Schedule (cron or one-time)",
    tags=TAGS,
    responses=docs(201, ScheduleOut, 404, 409, 413),
)
def create_schedule(body: ScheduleCreate, idempotency_key: IdempotencyKey = None) -> Response[str]:
    app_id = current_app_id()

    def create(schedule_id: str) -> Answer:
        return 201, schedule_view(service.create(app_id, body, clock.now(), schedule_id))

    def recover(schedule_id: str) -> Answer | None:
        schedule = data.get(app_id, schedule_id, consistent=True)
        return None if schedule is None else (201, schedule_view(schedule))

    return run_once(
        app_id, "schedules", idempotency_key, body.model_dump(mode="json"), "sch", create, recover
    )


@router.get("/v1/schedules", summary="List Schedules", tags=TAGS, responses=docs(200, SchedulePage))
def list_schedules(limit: Limit = 20, cursor: Cursor = None) -> Response[str]:
    app_id = current_app_id()
    page = data.list_page(app_id, limit, decode_cursor(cursor, "app_id", app_id))
    return json_response(200, page_body([schedule_view(s) for s in page.items], page.last_key))


@router.get(
    "/v1/schedules/<schedule_id>",
    summary="Get a Schedule (with ?preview=N next fire times)",
    tags=TAGS,
    responses=docs(200, ScheduleOut, 404),
)
def get_schedule(schedule_id: str, preview: Annotated[int, Query(ge=0, le=20)] = 0) -> Response[str]:
    schedule = service.get(current_app_id(), schedule_id)
    return json_response(
        200, schedule_view(schedule, service.preview(schedule, preview) if preview else None)
    )


@router.patch(
    "/v1/schedules/<schedule_id>",
    summary="Update a Schedule",
    tags=TAGS,
    responses=docs(200, ScheduleOut, 404, 409, 413),
)
def update_schedule(schedule_id: str, body: ScheduleUpdate) -> Response[str]:
    return json_response(200, schedule_view(service.update(current_app_id(), schedule_id, body, clock.now())))


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
    summary="Pause (cancels dispatched fires and retries)",
    tags=TAGS,
    responses=docs(200, ScheduleOut, 404, 409),
)
def pause_schedule(schedule_id: str) -> Response[str]:
    return json_response(200, schedule_view(service.pause(current_app_id(), schedule_id, clock.now())))


@router.post(
    "/v1/schedules/<schedule_id>/resume",
    summary="Resume (resets the failure counter)",
    tags=TAGS,
    responses=docs(200, ScheduleOut, 404, 409),
)
def resume_schedule(schedule_id: str) -> Response[str]:
    return json_response(200, schedule_view(service.resume(current_app_id(), schedule_id, clock.now())))


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
) -> Response[str]:
    schedule = service.get(current_app_id(), schedule_id)
    now_ms = clock.to_ms(clock.now())
    page = fire_data.recent(
        schedule.schedule_id, limit, now_ms, decode_cursor(cursor, "schedule_id", schedule.schedule_id)
    )
    run_ids = [run_id for fire in page.items for run_id in fire.run_ids]
    runs = {r.run_id: r for r in run_data.get_many(run_ids)}
    return json_response(200, page_body([fire_view(f, runs, now_ms) for f in page.items], page.last_key))
