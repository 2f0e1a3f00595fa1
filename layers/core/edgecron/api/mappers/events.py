"""Entity → response model: Events, and their deliveries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgecron.api.mappers import optional_int
from edgecron.clock import iso_ms
from edgecron.domain.vocabulary import FanoutStatus, RunStatus
from edgecron.schemas.events import EventDelivery, EventDetail, EventOut, EventSummary


def _event_fields(event: Any, matched: int) -> dict[str, Any]:
    return {
        "id": event.event_id,
        "name": event.name,
        "idempotency_key": event.idempotency_key,
        "fanout_status": FanoutStatus(event.fanout_status),
        "fanout_error": event.fanout_error,
        "matched_endpoints": matched,
        "created_at": iso_ms(event.created_at) or "",
    }


def event_out(event: Any, matched: int) -> EventOut:
    return EventOut(**_event_fields(event, matched), payload=event.payload)


def event_summary(event: Any, matched: int) -> EventSummary:
    return EventSummary(**_event_fields(event, matched))


def event_delivery(d: Any) -> EventDelivery:
    run = d.run
    return EventDelivery(
        endpoint_id=d.endpoint_id,
        task_run_id=d.run_id,
        status=RunStatus(run.status) if run else None,
        attempt_count=int(run.attempt_count) if run else 0,
        last_status_code=optional_int(run.last_status_code) if run else None,
        last_error=run.last_error if run else None,
    )


def event_detail(event: Any, matched: int, deliveries: Sequence[Any], next_cursor: str | None) -> EventDetail:
    return EventDetail(
        **_event_fields(event, matched),
        payload=event.payload,
        deliveries=[event_delivery(d) for d in deliveries],
        deliveries_next_cursor=next_cursor,
    )
