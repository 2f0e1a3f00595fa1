"""Usage metering: one Event publish, one schedule fire or one direct run is one billable trigger;
retries, replays and fan-out deliveries are not billed."""

from __future__ import annotations

from datetime import UTC, datetime

from edgecron.data import usage as data
from edgecron.observability import BILLABLE_TRIGGERS, count


def month_of(now_ms: int) -> str:
    return datetime.fromtimestamp(now_ms / 1000, UTC).strftime("%Y-%m")


def record_trigger(app_id: str, kind: str, now_ms: int) -> None:
    data.add(app_id, month_of(now_ms), kind)
    count(BILLABLE_TRIGGERS)


def usage_of(app_id: str, month: str) -> dict[str, int]:
    counts = data.get(app_id, month)
    return {**counts, "total": sum(counts.values())}
