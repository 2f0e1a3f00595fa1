"""SQS transport for delivery and fan-out messages. Queues may lose or repeat a message; DynamoDB
holds the truth, so every send here happens after the state it announces is stored.

Every message names its App as its message group (`MessageGroupId` on a standard queue), which makes
the queues SQS fair queues with the App as the tenant: when one App holds a disproportionate share
of the messages in flight or of the consumers' time, SQS hands out the other Apps' messages first,
so one App's burst or slow Endpoints do not delay everyone else's deliveries (docs/operations.md,
Fairness between Apps). Standard-queue semantics are unchanged: no ordering within a group, no
de-duplication, per-message delays."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data.aws import client
from edgecron.observability import ENQUEUE_FAILED, count, logger
from edgecron.schemas.messages import EventPage, FireGate, FirePage, ScheduleWindow

MAX_DELAY_SEC = 900  # SQS DelaySeconds limit


@dataclass(frozen=True)
class DeliveryMessage:
    """`due_ms` (absolute) is preferred to `delay_sec`: the delay is then computed when the message is
    sent, so a long dispatch (70 fires of a look-ahead window) does not make its last messages late."""

    run_id: str
    app_id: str
    delay_sec: float = 0.0
    due_ms: int | None = None

    def delay_at(self, now_ms: int) -> float:
        return self.delay_sec if self.due_ms is None else max(0.0, (self.due_ms - now_ms) / 1000)

    def body(self) -> str:
        return json.dumps({"run_id": self.run_id, "app_id": self.app_id}, separators=(",", ":"))


def _delay(seconds: float) -> int:
    """Whole seconds, rounded down: the message may surface up to 1 s early and the worker waits out
    the rest, so a delivery starts on its due time instead of up to a second late."""
    return max(0, min(MAX_DELAY_SEC, math.floor(seconds)))


def send_deliveries(messages: Sequence[DeliveryMessage], *, retry: bool = False) -> list[str]:
    """Send in batches of 10; return the run ids whose send failed (the scan will redispatch them).
    A failure does not raise (the runs are stored, the scan recovers them) but is counted in the
    EnqueueFailed metric, one per message, which an alarm watches."""
    settings = get_settings()
    url = settings.retry_queue_url if retry else settings.delivery_queue_url
    failed: list[str] = []
    for start in range(0, len(messages), 10):
        chunk = messages[start : start + 10]
        now_ms = clock.to_ms(clock.now())
        entries = [
            {
                "Id": str(i),
                "MessageBody": m.body(),
                "DelaySeconds": _delay(m.delay_at(now_ms)),
                "MessageGroupId": m.app_id,
            }
            for i, m in enumerate(chunk)
        ]
        try:
            result = client("sqs").send_message_batch(QueueUrl=url, Entries=entries)
        except Exception:
            logger.exception("send_message_batch failed", extra={"count": len(chunk)})
            failed.extend(m.run_id for m in chunk)
            continue
        for item in result.get("Failed", []):
            failed.append(chunk[int(item["Id"])].run_id)
    if failed:
        count(ENQUEUE_FAILED, len(failed))
    return failed


@dataclass(frozen=True)
class Backlog:
    """What the delivery and retry queues hold: `waiting` messages visible to workers (approximate,
    as SQS counts them) and how long a queue keeps a message (the shorter retention of the two)."""

    waiting: int
    retention_ms: int


def backlog() -> Backlog | None:
    """The delivery queues' backlog, or None when the queues cannot be asked."""
    settings = get_settings()
    waiting, retention_ms = 0, None
    try:
        # the retry queue may be the delivery queue itself (template.yaml): each queue counted once
        for url in dict.fromkeys((settings.delivery_queue_url, settings.retry_queue_url)):
            attrs = client("sqs").get_queue_attributes(
                QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "MessageRetentionPeriod"]
            )["Attributes"]
            waiting += int(attrs.get("ApproximateNumberOfMessages", 0))
            queue_ms = int(attrs.get("MessageRetentionPeriod", 345_600)) * 1000
            retention_ms = queue_ms if retention_ms is None else min(retention_ms, queue_ms)
    except Exception:
        logger.exception("queue attributes unavailable")
        return None
    return Backlog(waiting, retention_ms or 345_600_000)


def send_fanout(event_id: str, app_id: str, cursor: str | None = None, page: int = 0) -> None:
    """The fan-out message of one page of an Event (page 0 after no cursor)."""
    _send_fanout(EventPage(app_id=app_id, event_id=event_id, cursor=cursor, page=page))


def send_fire_fanout(
    schedule_id: str,
    fire_at_ms: int,
    app_id: str,
    cursor: str | None = None,
    page: int | None = 0,
    delay_sec: float = 0,
) -> None:
    """The fan-out message of one page of a broadcast Fire (a schedule bound to every Endpoint),
    handed out after `delay_sec`."""
    _send_fanout(
        FirePage(app_id=app_id, schedule_id=schedule_id, fire_at=fire_at_ms, cursor=cursor, page=page),
        delay_sec,
    )


def send_schedule_dispatch(schedule_id: str, app_id: str, until_ms: int) -> None:
    """Hand the rest of a new schedule's look-ahead window (its fires up to `until_ms`) to the
    fan-out function, so the request that created it answers after its first few fires."""
    _send_fanout(ScheduleWindow(app_id=app_id, schedule_id=schedule_id, dispatch_until=until_ms))


def send_fire_gate(schedule_id: str, fire_at_ms: int, app_id: str, delay_sec: float) -> None:
    """The message that lets a Fire under an overlap policy start at its due time (or wait, or be
    skipped): the fan-out function decides when it arrives."""
    _send_fanout(FireGate(app_id=app_id, schedule_id=schedule_id, fire_at=fire_at_ms), delay_sec)


def _send_fanout(body: EventPage | FirePage | ScheduleWindow | FireGate, delay_sec: float = 0) -> None:
    message = body.model_dump_json()
    extra = {"DelaySeconds": _delay(delay_sec)} if delay_sec else {}
    client("sqs").send_message(
        QueueUrl=get_settings().fanout_queue_url, MessageBody=message, MessageGroupId=body.app_id, **extra
    )
