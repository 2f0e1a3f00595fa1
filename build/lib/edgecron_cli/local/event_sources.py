"""EventBridge schedules and Lambda's SQS pollers, emulated with threads against moto."""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError
from croniter import croniter

from edgecron_cli.local.intrinsics import ACCOUNT_ID, REGION, STACK_NAME, TemplateError
from edgecron_cli.local.lambda_runtime import Container
from edgecron_cli.local.template import ScheduleEvent, SqsEvent

log = logging.getLogger("edgecron_cli.local")

SCAN_INTERVAL_ENV = "EDGECRON_LOCAL_SCAN_INTERVAL"
_RATE = re.compile(r"rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
_SQS_MAX_BATCH = 10  # one ReceiveMessage returns at most 10 messages


def next_fire(expression: str, after: datetime) -> datetime:
    """The first fire time of an EventBridge schedule expression strictly after `after` (UTC).

    `rate()` schedules fire on multiples of their period (every minute on the minute); `cron()` uses
    EventBridge's six fields (day of week 1-7 = SUN-SAT; `L`, `W` and `#` are not supported).
    """
    rate = _RATE.fullmatch(expression.strip())
    if rate:
        period = int(rate.group(1)) * _UNIT_SECONDS[rate.group(2).rstrip("s")]
        return datetime.fromtimestamp((int(after.timestamp()) // period + 1) * period, UTC)
    if expression.startswith("cron(") and expression.endswith(")"):
        fields = expression[5:-1].split()
        if len(fields) != 6 or any(mark in expression for mark in "LW#"):
            raise TemplateError(f"unsupported schedule expression {expression!r}")
        minute, hour, day, month, weekday, year = fields
        if year not in ("*", "?"):
            raise TemplateError(f"{expression!r}: the year field must be '*' on the local stack")
        spec = " ".join(
            [minute, hour, day.replace("?", "*"), month, _cron_weekday(weekday.replace("?", "*"))]
        )
        found: datetime = croniter(spec, after.astimezone(UTC)).get_next(datetime)
        return found
    raise TemplateError(f"unsupported schedule expression {expression!r}")


def _cron_weekday(field: str) -> str:
    """EventBridge numbers days 1-7 from Sunday; cron numbers them 0-6 (steps stay as they are)."""
    items = []
    for item in field.split(","):
        base, slash, step = item.partition("/")
        items.append(re.sub(r"\d+", lambda number: str(int(number.group(0)) - 1), base) + slash + step)
    return ",".join(items)


def scheduled_event(rule_name: str, fire_time: datetime) -> dict[str, Any]:
    """The payload EventBridge sends a target of a schedule rule."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": fire_time.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{rule_name}"],
        "detail": {},
    }


class Waiter(Protocol):
    """Says when a message of a queue is visible (moto_server.QueueWaiter, asked in moto's process)."""

    def wait(self, timeout: float) -> bool | None: ...


# Pollers wait on a QueueWaiter (moto_server.py), which wakes them when a message becomes visible, then
# receive without waiting. If a receive finds nothing although a message was visible (another poller was
# faster, or the message went to the DLQ), the poller pauses this long, so that it never spins.
_IDLE_POLL_SEC = 0.05
_WAIT_SEC = 1.0


class ScheduleSource:
    """Invokes a function on its schedule, or every EDGECRON_LOCAL_SCAN_INTERVAL seconds when that is set.

    Invocations are sequential: a tick that comes while the previous invocation still runs is skipped.
    """

    def __init__(self, container: Container, event: ScheduleEvent, stop: threading.Event) -> None:
        self.name = f"schedule-{container.name}"
        self.container = container
        self._event = event
        self._stopping = stop
        self._rule = f"{STACK_NAME}-{container.function.logical_id}{event.name}"
        interval = os.environ.get(SCAN_INTERVAL_ENV)
        self._interval = float(interval) if interval else None

    def _next(self, after: datetime) -> datetime:
        if self._interval is None:
            return next_fire(self._event.expression, after)
        return after + timedelta(seconds=self._interval)

    def run(self) -> None:
        due = self._next(datetime.now(UTC))
        while not self._stopping.wait(max(0.0, due.timestamp() - time.time())):
            self.container.invoke(self._event.input or scheduled_event(self._rule, due))
            now = datetime.now(UTC)
            due = self._next(due)
            while due <= now:
                due = self._next(due)


def sqs_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """A Lambda SQS event record from a ReceiveMessage message."""
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": dict(message.get("Attributes") or {}),
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": base64.b64encode(value["BinaryValue"]).decode()
                if "BinaryValue" in value
                else None,
                "stringListValues": value.get("StringListValues", []),
                "binaryListValues": [
                    base64.b64encode(item).decode() for item in value.get("BinaryListValues", [])
                ],
                "dataType": value["DataType"],
            }
            for name, value in (message.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def failed_message_ids(result: Any, message_ids: list[str]) -> set[str]:
    """Which records to keep after a ReportBatchItemFailures response.

    As Lambda does, a response naming an item that is not in the batch fails the whole batch.
    """
    failures = (result.get("batchItemFailures") if isinstance(result, dict) else None) or []
    failed = {str(item.get("itemIdentifier") or "") for item in failures if isinstance(item, dict)}
    if len(failed) != len(failures) or not failed <= set(message_ids):
        return set(message_ids)
    return failed


class SqsPoller:
    """One of Lambda's pollers for an SQS event source: receive a batch, invoke, delete what succeeded.

    Records that are not deleted become visible again after the queue's visibility timeout, and moto
    moves them to the dead-letter queue after the RedrivePolicy's maxReceiveCount.
    """

    def __init__(
        self,
        container: Container,
        event: SqsEvent,
        queue_url: str,
        queue_arn: str,
        sqs: Any,
        stop: threading.Event,
        *,
        waiter: Waiter | None = None,
    ) -> None:
        self.name = f"sqs-{event.name}-{container.name}"
        self._waiter = waiter
        self._container = container
        self._event = event
        self._queue_url = queue_url
        self._queue_arn = queue_arn
        self._sqs = sqs
        self._stopping = stop

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._poll_once()
            except (BotoCoreError, ClientError):
                if self._stopping.is_set():
                    return  # e.g. moto's process is gone and the stack is stopping
                log.exception("%s: polling %s failed; retrying in 1 s", self.name, self._queue_url)
                self._stopping.wait(1)

    def _poll_once(self) -> None:
        visible = self._waiter.wait(_WAIT_SEC) if self._waiter is not None else None
        if visible is False or self._stopping.is_set():
            return
        messages = self._sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=min(self._event.batch_size, _SQS_MAX_BATCH),
            WaitTimeSeconds=0 if visible else 1,
            AttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not messages:
            if visible:
                self._stopping.wait(_IDLE_POLL_SEC)
            return
        invocation = self._container.invoke({"Records": [sqs_record(m, self._queue_arn) for m in messages]})
        if not invocation.ok:
            return  # a function error leaves the whole batch on the queue
        ids = [m["MessageId"] for m in messages]
        failed = (
            failed_message_ids(invocation.result, ids) if self._event.report_batch_item_failures else set()
        )
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self._delete_messages(done)

    def _delete_messages(self, messages: list[dict[str, Any]]) -> None:
        response = self._sqs.delete_message_batch(
            QueueUrl=self._queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )
        for failure in response.get("Failed", []):
            log.warning("%s: could not delete a message: %s", self.name, failure.get("Message"))
