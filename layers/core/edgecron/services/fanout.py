"""The fan-out function's use case: one message = one page of the App's Endpoints.

For the page after `cursor` (Endpoint ids in key order, read by app_id so no other App is seen):
(a) every ACTIVE Endpoint whose filter_events matches the Event's name gets a Task Run with the
deterministic id (event × endpoint), created with a conditional put, (b) those runs are enqueued,
(c) if Endpoints remain, a continuation message carries the page's last Endpoint id as its cursor,
(d) the matched Endpoint ids are recorded on the Event, which is marked done after the last page.

A crash between any two steps, or the same message delivered twice, repeats the page: the puts are
no-ops, re-enqueueing an existing run is absorbed by the worker's conditional claim, and the
record step skips ids already recorded. No step creates a second run. Because (c) comes before
(d), a page whose matched Endpoints are all recorded already had its continuation sent, so a
repeated message for it stops there instead of walking the rest of the Endpoints a second time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from edgecron import clock
from edgecron.data import events as event_data
from edgecron.data import runs as run_data
from edgecron.data.expiry import is_alive
from edgecron.data.models import EventModel
from edgecron.data.queues import DeliveryMessage, send_deliveries, send_fanout
from edgecron.domain.event_filters import matches_any
from edgecron.observability import logger
from edgecron.services.events import run_id_for
from edgecron.services.task_runs import enqueue_plan

PAGE_SIZE = 100


@dataclass(frozen=True)
class FanoutMessage:
    event_id: str
    app_id: str
    cursor: str | None


@dataclass(frozen=True)
class FanoutReport:
    outcome: str  # page | done | skipped
    matched: int = 0
    created: int = 0


def parse_message(body: str) -> FanoutMessage:
    """A fan-out message, or ValueError for a malformed (poison) one."""
    data = json.loads(body)
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("event_id"), str)
        or not isinstance(data.get("app_id"), str)
        or not isinstance(data.get("cursor"), str | None)
    ):
        raise ValueError("fan-out message needs string event_id and app_id, and a string or null cursor")
    return FanoutMessage(data["event_id"], data["app_id"], data.get("cursor"))


def delivery_body(event: EventModel) -> dict[str, Any]:
    """What each Endpoint receives: the Standard Webhooks payload envelope, so a receiver of
    several event types (`*`, `invoice.*`) can tell them apart."""
    return {
        "type": event.name,
        "timestamp": clock.iso_ms(event.created_at),
        "event_id": event.event_id,
        "data": event.payload,
    }


def fan_out(message: FanoutMessage, page_size: int = PAGE_SIZE) -> FanoutReport:
    """Process one page. Raises only on infrastructure errors (SQS redelivers the message)."""
    now_ms = clock.to_ms(clock.now())
    event = event_data.get(message.app_id, message.event_id, consistent=True)
    if event is None or not is_alive(event.expires_at, now_ms):
        logger.warning("fan-out for a missing event dropped", extra={"event_id": message.event_id})
        return FanoutReport("skipped")
    if event.fanout_status == event_data.DONE:
        return FanoutReport("skipped")  # a duplicate of a message whose chain already finished
    endpoints, more = event_data.endpoints_page(event.app_id, message.cursor, page_size)
    matched = [ep.endpoint_id for ep in endpoints if ep.active and matches_any(ep.filter_events, event.name)]
    recorded = set(event.endpoint_ids or [])
    if matched and all(endpoint_id in recorded for endpoint_id in matched):
        return FanoutReport("skipped", len(matched))  # this page was done by an earlier delivery
    created = _create_runs(event, matched, now_ms)
    failed = send_deliveries(
        [DeliveryMessage(run_id_for(event.event_id, ep), event.app_id) for ep in matched]
    )
    if failed:
        logger.warning("event runs not enqueued; redispatched by the scan", extra={"count": len(failed)})
    if more:
        send_fanout(event.event_id, event.app_id, cursor=endpoints[-1].endpoint_id)
    if event_data.record_page(event, matched, done=not more) is None:
        return FanoutReport("skipped", len(matched), created)
    return FanoutReport("page" if more else "done", len(matched), created)


def _create_runs(event: EventModel, endpoint_ids: list[str], now_ms: int) -> int:
    """One pending run per Endpoint, due now; returns how many did not exist yet."""
    _, wake_at = enqueue_plan(now_ms, now_ms)
    body = delivery_body(event)
    created = 0
    for endpoint_id in endpoint_ids:
        run = run_data.new_run(
            run_id=run_id_for(event.event_id, endpoint_id),
            app_id=event.app_id,
            endpoint_id=endpoint_id,
            source="event",
            source_id=event.event_id,
            payload=body,
            deliver_at_ms=now_ms,
            wake_at_ms=wake_at,
            now_ms=now_ms,
        )
        if run_data.put_new(run):
            created += 1
    return created
