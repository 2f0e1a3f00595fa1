"""Events: publish (fanned out to the matching Endpoints off the request path), look up, list, and
re-drive a fan-out that failed."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from edgecron import clock
from edgecron.api.context import current_app_id
from edgecron.api.idempotency import IdempotencyKey, run_once
from edgecron.api.mappers import events as mappers
from edgecron.api.pagination import Cursor, Limit, decode_cursor, encode_cursor
from edgecron.api.responses import docs
from edgecron.errors import ParamInvalid
from edgecron.schemas.common import Rfc3339
from edgecron.schemas.events import EventCreate, EventDetail, EventName, EventOut, EventPage
from edgecron.services import events as service

router = Router()
TAGS = ["Events"]


def _now_ms() -> int:
    return clock.to_ms(clock.now())


def _start(cursor: str | None, event_id: str) -> service.DeliveriesCursor:
    """The deliveries cursor: a fan-out page and an index in it."""
    key = decode_cursor(cursor, "event_id", event_id)
    if key is None:
        return 0, 0
    page = key.get("page", {}).get("N", "")
    index = key.get("index", {}).get("N", "")
    if not (isinstance(page, str) and page.isdigit() and isinstance(index, str) and index.isdigit()):
        raise ParamInvalid("cursor is not valid", "cursor")
    return int(page), int(index)


@router.post(
    "/v1/events",
    summary="Publish an Event (fanned out to every active Endpoint whose filter_events match)",
    tags=TAGS,
    responses=docs(202, EventOut, 409, 413, 429),
)
def publish_event(body: EventCreate, idempotency_key: IdempotencyKey = None) -> Response[EventOut]:
    app_id = current_app_id()

    def create(event_id: str) -> EventOut:
        event = service.publish(app_id, body, clock.now(), idempotency_key, event_id)
        return mappers.event_out(event, service.matched(event))

    def recover(event_id: str) -> EventOut | None:
        event = service.recover(app_id, event_id)
        return None if event is None else mappers.event_out(event, service.matched(event))

    return run_once(
        app_id, "events", idempotency_key, body.model_dump(mode="json"), "evt", 202, create, recover
    )


@router.get("/v1/events", summary="List Events, newest first", tags=TAGS, responses=docs(200, EventPage))
def list_events(
    limit: Limit = 20,
    cursor: Cursor = None,
    name: Annotated[EventName | None, Query(description="exact event name")] = None,
    since: Annotated[Rfc3339 | None, Query(description="created at or after (RFC 3339)")] = None,
    until: Annotated[Rfc3339 | None, Query(description="created at or before (RFC 3339)")] = None,
) -> EventPage:
    app_id = current_app_id()
    page = service.list_page(
        app_id, limit, decode_cursor(cursor, "app_id", app_id), _now_ms(), name=name, since=since, until=until
    )
    return EventPage(
        data=[mappers.event_summary(e, service.matched(e)) for e in page.items],
        next_cursor=encode_cursor(page.last_key),
    )


@router.get(
    "/v1/events/<event_id>",
    summary="Get an Event with its matched Endpoints and their Task Runs (deliveries paged)",
    tags=TAGS,
    responses=docs(200, EventDetail, 404),
)
def get_event(event_id: str, limit: Limit = 100, cursor: Cursor = None) -> EventDetail:
    now_ms = _now_ms()
    event = service.get(current_app_id(), event_id, now_ms)
    page, nxt = service.deliveries(event, _start(cursor, event.event_id), limit, now_ms)
    next_cursor = (
        encode_cursor(
            {"event_id": {"S": event.event_id}, "page": {"N": str(nxt[0])}, "index": {"N": str(nxt[1])}}
        )
        if nxt is not None
        else None
    )
    return mappers.event_detail(event, service.matched(event), page, next_cursor)


@router.post(
    "/v1/events/<event_id>/redrive",
    summary="Resume a failed fan-out from its first page not yet done (pages already done are not repeated)",
    tags=TAGS,
    responses=docs(202, EventOut, 404, 409),
)
def redrive_event(event_id: str) -> Response[EventOut]:
    event = service.redrive(current_app_id(), event_id, _now_ms())
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=mappers.event_out(event, service.matched(event)),
    )
