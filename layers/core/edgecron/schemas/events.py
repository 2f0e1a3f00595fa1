"""Events: published business events, fanned out to the Endpoints whose filter_events match."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, StringConstraints, WithJsonSchema

from edgecron.domain.event_filters import MAX_NAME_LENGTH, NAME_PATTERN, validate_name
from edgecron.domain.vocabulary import FanoutStatus, RunStatus
from edgecron.schemas.common import Model, Page, Strict

EventName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_NAME_LENGTH),
    AfterValidator(validate_name),
    # what validate_name enforces, for clients; the server's own check gives the friendlier message
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_NAME_LENGTH,
            "pattern": NAME_PATTERN,
        }
    ),
]


class EventCreate(Strict):
    name: EventName = Field(
        description="dotted segments of letters, digits, '_' or '-', e.g. invoice.paid; "
        "names under 'edgecron.' are EdgeCron's own operational events"
    )
    payload: Any = Field(default=None, description="any JSON value; delivered as the `data` of the envelope")


class EventOut(Model):
    id: str
    name: str
    idempotency_key: str | None
    fanout_status: FanoutStatus = Field(
        description="pending (queued), running (some Endpoints done), done (every Endpoint matched), "
        "failed (a fan-out page kept failing; see fanout_error, then POST /v1/events/{id}/redrive)"
    )
    fanout_error: str | None = Field(default=None, description="why the fan-out stopped (failed only)")
    matched_endpoints: int = Field(description="Endpoints matched so far (each got one Task Run)")
    created_at: str
    payload: Any = None


class EventDelivery(Model):
    endpoint_id: str
    task_run_id: str
    status: RunStatus | None = Field(description="the Task Run's status; null if it expired")
    attempt_count: int
    last_status_code: int | None
    last_error: str | None


class EventDetail(EventOut):
    deliveries: list[EventDelivery] = Field(description="one per matched Endpoint, in fan-out order")
    deliveries_next_cursor: str | None = Field(
        description="pass as ?cursor= for the next page of deliveries; null at the end"
    )


class EventSummary(Model):
    id: str
    name: str
    idempotency_key: str | None
    fanout_status: FanoutStatus
    fanout_error: str | None = None
    matched_endpoints: int
    created_at: str


class EventPage(Page[EventSummary]):
    pass
