"""Usage metering: one Event publish, one schedule fire or one direct run is one billable trigger;
retries, replays and fan-out deliveries are not billed. Each trigger is counted by one conditional
write, done once or not at all, so the counts are exact under any fault (data/usage.py):

- an Event by the transaction that stores it;
- a direct run by the transaction that stores it, except one sent at its creation by an App without
  a quota, which the scan's check of recent runs counts a few minutes later with the conditional
  move of its mark past the run;
- a schedule fire by the put of its first Endpoint's run (counted as a direct run is: by the put's
  transaction, or by the check), whatever that run's status, or by the record of a broadcast
  fire's first fan-out page (services/fires/billing.py). A fire refused for the quota or recorded
  missed, and a broadcast fire stopped before its first page, is not billed."""

from __future__ import annotations

from edgecron.data import run_checks
from edgecron.data import usage as data
from edgecron.domain.task_runs import TaskRun
from edgecron.observability import BILLABLE_TRIGGERS, count

COUNTED_BY_CHECK = run_checks.COUNTED_KINDS  # the kinds of trigger a run marked `counted_by_check` is


def month_of(now_ms: int) -> str:
    return data.month_of(now_ms)


def recorded() -> None:
    """A trigger counted by the write of its object (or marked for the check to count): the metric."""
    count(BILLABLE_TRIGGERS)


counting_batch = data.batch  # a worker invocation counts the runs it claims together


def checked_counts(runs: list[TaskRun]) -> dict[tuple[str, str], int]:
    """Of the runs the scan's check of recent runs has read once, the triggers it counts (runs marked
    `counted_by_check`: a direct run, or the run that bills its schedule fire), by the month of the
    run's creation and kind: counted with the move of the check's mark (data/run_checks.py
    `mark_checked`), one write per App and page."""
    todo: dict[tuple[str, str], int] = {}
    for run in runs:
        if run.counted_by_check and run.source in COUNTED_BY_CHECK:
            key = (month_of(int(run.created_at)), str(run.source))
            todo[key] = todo.get(key, 0) + 1
    return todo


def usage_of(app_id: str, month: str, *, held: bool = True) -> dict[str, int]:
    """The billed triggers: the counters, plus the triggers the check counted on the App's mark and
    has not moved to the counters yet (`held`; the quota check leaves them out, see services/quota.py)."""
    counts = data.get(app_id, month)
    if held:
        for kind, n in run_checks.held_for(app_id, month).items():
            counts[kind] += n
    return {**counts, "total": sum(counts.values())}
