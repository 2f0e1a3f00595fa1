"""Usage metering: one Event publish, one schedule fire or one direct run is one billable trigger;
retries, replays and fan-out deliveries are not billed. A direct run sent at its creation is added
to the counter by the worker that first claims it (counted in the month the run was created), or,
for an App without a quota, by the scan's check of recent runs a few minutes later; a
scan tick bills its schedule fires from reservations (data/usage.py `reserving`)."""

from __future__ import annotations

from edgecron.data import usage as data
from edgecron.domain.task_runs import TaskRun
from edgecron.observability import BILLABLE_TRIGGERS, count


def month_of(now_ms: int) -> str:
    return data.month_of(now_ms)


def record_trigger(app_id: str, kind: str, now_ms: int, *, counted_later: bool = False) -> None:
    """One billable trigger. `counted_later`: a direct run sent at its creation, which its worker
    (`uncounted`) or the scan's check of recent runs (`counted_by_check`) adds to the counter."""
    if not counted_later:
        data.spend(app_id, month_of(now_ms), kind)
    count(BILLABLE_TRIGGERS)


def take_back_trigger(app_id: str, kind: str, now_ms: int) -> None:
    """Undo a `record_trigger` made at `now_ms` for something that turned out not to be new (a Fire
    written before, an Event whose publish failed). The metric is taken back with the counter, so
    the BillableTriggers sum agrees with what is billed."""
    data.give_back(app_id, month_of(now_ms), kind)
    count(BILLABLE_TRIGGERS, -1)


counting_batch = data.batch  # a worker invocation counts the runs it claims together
billing_ahead = data.reserving  # a scan tick bills its fires from reservations


def count_checked(runs: list[TaskRun]) -> None:
    """The scan's check of recent runs read these runs once, before it moves its mark past them:
    the ones it counts go into the counters, one ADD per App and month (of their creation). A check
    that dies before its mark moved counts them again: too much, never too little."""
    todo: dict[tuple[str, str], int] = {}
    for run in runs:
        if run.counted_by_check:
            key = (run.app_id, month_of(int(run.created_at)))
            todo[key] = todo.get(key, 0) + 1
    for (app_id, month), n in todo.items():
        data.add(app_id, month, "direct", n)


def usage_of(app_id: str, month: str) -> dict[str, int]:
    """The billed triggers: the counters less what the current reservation holds unspent."""
    unspent = data.unspent(app_id, month)
    counts = {kind: used - unspent.get(kind, 0) for kind, used in data.get(app_id, month).items()}
    return {**counts, "total": sum(counts.values())}
