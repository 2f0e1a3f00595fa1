"""Usage metering: one Event publish, one schedule fire or one direct run is one billable trigger;
retries, replays and fan-out deliveries are not billed. A direct run is counted by the transaction
that stores it, except one sent at its creation by an App without a quota, which the scan's check
of recent runs counts a few minutes later with the conditional move of its mark past the run (so
each exactly once); a scan tick bills its schedule fires from reservations (data/usage.py
`reserving`)."""

from __future__ import annotations

from edgecron.data import run_checks
from edgecron.data import usage as data
from edgecron.domain.task_runs import TaskRun
from edgecron.observability import BILLABLE_TRIGGERS, count


def month_of(now_ms: int) -> str:
    return data.month_of(now_ms)


def record_trigger(app_id: str, kind: str, now_ms: int, *, counted_later: bool = False) -> None:
    """One billable trigger. `counted_later`: a direct run sent at its creation that the scan's
    check of recent runs adds to the counter (`counted_by_check`)."""
    if not counted_later:
        data.spend(app_id, month_of(now_ms), kind)
    count(BILLABLE_TRIGGERS)


def recorded_with_object() -> None:
    """A trigger counted by the write of its object itself (data/usage.py `counted`): the metric."""
    count(BILLABLE_TRIGGERS)


def take_back_trigger(app_id: str, kind: str, now_ms: int) -> None:
    """Undo a `record_trigger` made at `now_ms` for something that turned out not to be new (a Fire
    written before, an Event whose publish failed). The metric is taken back with the counter, so
    the BillableTriggers sum agrees with what is billed."""
    data.give_back(app_id, month_of(now_ms), kind)
    count(BILLABLE_TRIGGERS, -1)


counting_batch = data.batch  # a worker invocation counts the runs it claims together
billing_ahead = data.reserving  # a scan tick bills its fires from reservations


def checked_counts(runs: list[TaskRun]) -> dict[str, int]:
    """Of the runs the scan's check of recent runs has read once, the ones it counts (direct runs of
    an App without a quota, marked `counted_by_check`), by the month of their creation: counted with
    the move of the check's mark (data/run_checks.py `mark_checked`), one write per App and page."""
    todo: dict[str, int] = {}
    for run in runs:
        if run.counted_by_check:
            month = month_of(int(run.created_at))
            todo[month] = todo.get(month, 0) + 1
    return todo


def usage_of(app_id: str, month: str, *, held: bool = True) -> dict[str, int]:
    """The billed triggers: the counters less what the current reservation holds unspent, plus the
    direct runs the check counted on the App's mark and has not moved to the counter yet (`held`;
    the quota check leaves them out, see services/quota.py)."""
    unspent = data.unspent(app_id, month)
    counts = {kind: used - unspent.get(kind, 0) for kind, used in data.get(app_id, month).items()}
    if held:
        counts["direct"] += run_checks.held_for(app_id, month)
    return {**counts, "total": sum(counts.values())}
