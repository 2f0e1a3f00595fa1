"""The Lambda SQS record, as the event source mapping hands it to a function, and the record of each
of EdgeCron's queues, whose body is that queue's message (edgecron.schemas.messages).

SqsRecord has the same fields and types as Powertools' parser model of an SQS record, declared here
so that a function reading a queue builds this one model rather than importing the parser's models
of every event source (over a hundred pydantic classes, a tenth of a second of its cold start). Only
the functions reading a queue import this module; those that only send messages build none of it.

The functions reading the queues hand these record models to their batch runner (edgecron.sqs_batch),
which parses each record's JSON body before the handler sees it. A body that does not parse (not JSON,
nested past the parser's limit, the wrong shape, ids no object can have) fails that record alone:
SQS delivers it again and, after its receive limit, moves it to the queue's DLQ. The DLQ consumers'
records accept any body, and keep one that does not parse as its text, so they can record it as
unparseable and let it go instead of failing it for ever."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, Json

from edgecron.schemas.messages import DeliveryBody, FanoutBody


class SqsAttributes(BaseModel):
    ApproximateReceiveCount: str
    ApproximateFirstReceiveTimestamp: datetime
    MessageDeduplicationId: str | None = None
    MessageGroupId: str | None = None
    SenderId: str
    SentTimestamp: datetime
    SequenceNumber: str | None = None
    AWSTraceHeader: str | None = None
    DeadLetterQueueSourceArn: str | None = None


class SqsMessageAttribute(BaseModel):
    stringValue: str | None = None
    binaryValue: str | None = None
    stringListValues: list[str] = []
    binaryListValues: list[str] = []
    dataType: str


class SqsRecord(BaseModel):
    """One record of an SQS event; a subclass gives `body` the type of the queue's messages."""

    messageId: str
    receiptHandle: str
    body: str
    attributes: SqsAttributes
    messageAttributes: dict[str, SqsMessageAttribute]
    md5OfBody: str
    md5OfMessageAttributes: str | None = None
    eventSource: Literal["aws:sqs"]
    eventSourceARN: str
    awsRegion: str


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
