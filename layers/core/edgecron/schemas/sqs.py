"""The Lambda SQS record, as the event source mapping hands it to a function.

The same fields and types as Powertools' parser model of an SQS record, declared here so that a
function reading a queue builds this one model rather than importing the parser's models of every
event source (over a hundred pydantic classes, a tenth of a second of its cold start)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel


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


__all__ = ["SqsRecord"]
