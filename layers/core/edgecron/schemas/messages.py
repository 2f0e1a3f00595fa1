"""The bodies of EdgeCron's SQS messages, and the Lambda SQS records that carry them.

The functions reading the queues hand these record models to Powertools' batch processor, which
parses each record's JSON body before the handler sees it. A body that does not parse (not JSON,
nested past the parser's limit, the wrong shape, ids no object can have) fails that record alone:
SQS delivers it again and, after its receive limit, moves it to the queue's DLQ. The DLQ consumers'
records accept any body, and keep one that does not parse as its text, so they can record it as
unparseable and let it go instead of failing it for ever."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, Json, StringConstraints, model_validator

from edgecron.schemas.common import Id
from edgecron.schemas.sqs import SqsRecord

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


class FanoutBody(_Body):
    """A fan-out message: one page of an Event's Endpoints (`event_id`), one page of a broadcast
    Fire's (`schedule_id` and `fire_at`), a new schedule's fires up to `dispatch_until`, or the
    due time of a Fire under an overlap policy (`gate`, with `schedule_id` and `fire_at`).

    `page` is None only in a message of an earlier version (before pages were numbered) that has a
    cursor; without a cursor, a message that gives no page is page 0."""

    app_id: Id
    event_id: Id | None = None
    schedule_id: Id | None = None
    fire_at: Count | None = None
    dispatch_until: Count | None = None
    gate: bool = False  # the due time of a Fire under an overlap policy (schedule_id, fire_at)
    cursor: Cursor | None = None
    page: Count | None = None

    @model_validator(mode="after")
    def _one_owner(self) -> Self:
        if self.dispatch_until is not None:
            if self.schedule_id is None:
                raise ValueError("a schedule's dispatch message needs a schedule_id")
            return self
        if self.event_id is None and (self.schedule_id is None or self.fire_at is None):
            raise ValueError("a fan-out message needs an event_id, or a schedule_id and a fire_at")
        if "page" not in self.model_fields_set and not self.cursor:
            object.__setattr__(self, "page", 0)
        return self


class DeliveryRecord(SqsRecord):
    body: Json[DeliveryBody]  # type: ignore[assignment]


class FanoutRecord(SqsRecord):
    body: Json[FanoutBody]  # type: ignore[assignment]


class DeliveryDeadLetter(SqsRecord):
    """A record of the delivery DLQ: its message, or the text of one that does not parse."""

    body: Json[DeliveryBody] | str = Field(union_mode="left_to_right")  # type: ignore[assignment]


class FanoutDeadLetter(SqsRecord):
    """A record of the fan-out DLQ: its message, or the text of one that does not parse."""

    body: Json[FanoutBody] | str = Field(union_mode="left_to_right")  # type: ignore[assignment]


def receive_count(record: SqsRecord) -> int:
    """How many times SQS handed the message out (0 when the attribute is not a number)."""
    text = record.attributes.ApproximateReceiveCount
    return int(text) if text.isdecimal() and len(text) < 10 else 0
