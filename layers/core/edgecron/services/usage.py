"""Usage metering: one Event publish, one schedule fire or one direct run is one billable trigger;
retries, replays and fan-out deliveries are not billed. A direct run sent at its creation is added
to the counter by the worker that first claims it (counted in the month the run was created)."""

from __future__ import annotations

from edgecron.data import usage as data
from edgecron.observability import BILLABLE_TRIGGERS, count


def month_of(now_ms: int) -> str:
    return data.month_of(now_ms)


def record_trigger(app_id: str, kind: str, now_ms: int, *, by_worker: bool = False) -> None:
    """One billable trigger. `by_worker`: a direct run sent at its creation, created marked
    `uncounted`, whose worker adds it to the counter (data/usage.py)."""
    if not by_worker:
        data.add(app_id, month_of(now_ms), kind)
    count(BILLABLE_TRIGGERS)


def take_back_trigger(app_id: str, kind: str, now_ms: int) -> None:
    """Undo a `record_trigger` made at `now_ms` for something that turned out not to be new (a Fire
    written before, an Event whose publish failed). The metric is taken back with the counter, so
    the BillableTriggers sum agrees with what is billed."""
    data.add(app_id, month_of(now_ms), kind, -1)
    count(BILLABLE_TRIGGERS, -1)


counting_batch = data.batch  # a worker invocation counts the runs it claims together


def usage_of(app_id: str, month: str) -> dict[str, int]:
    counts = data.get(app_id, month)
    return {**counts, "total": sum(counts.values())}
