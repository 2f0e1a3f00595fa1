"""The bodies of EdgeCron's SQS messages: what the functions send, and what the queues' consumers
read from the records that carry them (edgecron.schemas.sqs)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    model_validator,
)

from edgecron.schemas.common import Id

Count = Annotated[int, Field(ge=0)]  # strict: `true`, `"5"` and `5.0` are not counts
Cursor = Annotated[str, StringConstraints(max_length=2048)]
#: The App a delivery message names: carried along (a requeued message keeps it), never used as a key.
CarriedAppId = Annotated[str, StringConstraints(max_length=64)]


class _Body(BaseModel):
    """Fields of later versions are ignored, so a message sent by a newer release is still read."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class DeliveryBody(_Body):
    """A delivery or retry message: the run to attempt (the run itself holds everything else)."""

    run_id: Id
    app_id: CarriedAppId


class _FanoutBody(_Body):
    app_id: Id


class _Paged(_FanoutBody):
    """One page of a fan-out chain. `page` is None only in a message of an earlier version (before
    pages were numbered) that has a cursor; without a cursor, a message that gives no page is page 0."""

    cursor: Cursor | None = None
    page: Count | None = None

    @model_validator(mode="after")
    def _first_page(self) -> Self:
        if "page" not in self.model_fields_set and not self.cursor:
            object.__setattr__(self, "page", 0)
        return self


class EventPage(_Paged):
    """One page of an Event's Endpoints."""

    kind: Literal["event_page"] = "event_page"
    event_id: Id


class FirePage(_Paged):
    """One page of a broadcast Fire's Endpoints (a schedule bound to every Endpoint)."""

    kind: Literal["fire_page"] = "fire_page"
    schedule_id: Id
    fire_at: Count


class ScheduleWindow(_FanoutBody):
    """A new schedule's fires to dispatch up to `dispatch_until`, a step per message."""

    kind: Literal["schedule_window"] = "schedule_window"
    schedule_id: Id
    dispatch_until: Count


class FireGate(_FanoutBody):
    """The due time of a Fire under an overlap policy: start it, buffer it or skip it."""

    kind: Literal["fire_gate"] = "fire_gate"
    schedule_id: Id
    fire_at: Count
    gate: Literal[True] = True  # how a release that reads no `kind` tells a gate from a Fire's page


def _kind(body: Any) -> str | None:
    """Which fan-out message a body is: its `kind`, or, in a message of an earlier version that has
    none, the fields it carries (`dispatch_until`, `event_id`, `gate`, else a Fire's page)."""
    if not isinstance(body, dict):
        return getattr(body, "kind", None)
    kind = body.get("kind")
    if isinstance(kind, str):
        return kind
    if body.get("dispatch_until") is not None:
        return "schedule_window"
    if body.get("event_id") is not None:
        return "event_page"
    if body.get("gate") is True:
        return "fire_gate"
    return "fire_page"


#: A fan-out message: exactly one of four kinds, each with the fields it needs and no others.
FanoutBody = Annotated[
    Annotated[EventPage, Tag("event_page")]
    | Annotated[FirePage, Tag("fire_page")]
    | Annotated[ScheduleWindow, Tag("schedule_window")]
    | Annotated[FireGate, Tag("fire_gate")],
    Discriminator(_kind),
]
