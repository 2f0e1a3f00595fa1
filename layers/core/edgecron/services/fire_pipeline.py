"""The fire pipeline: the one surface through which the scan, the fan-out function, the deploy
compensation and the schedule use cases move a schedule's Fires.

- dispatch: create a schedule's Fires up to a horizon, and their Task Runs (or a broadcast Fire's
  first fan-out page); a create's first fires, the rest of a new schedule's window (handed to the
  fan-out function), the scan's due schedules in fire-time order.
- settle: a Fire follows its runs to its final status once, and counts toward auto-pause.
- catch up: a schedule that lagged past its fire times follows its missed-fire policy.
- reconcile: Fires a crash left half dispatched are dispatched again; dispatched Fires whose messages
  were lost follow the missed-fire policy.
- admit: at its due time, a Fire under an overlap policy starts, waits (BUFFERED) or is SKIPPED;
  the Fire that held the schedule's slot starts the buffered one when it settles.

Every late-fire and catch-up decision is a pure planner in `edgecron.domain.catchup`; the steps that
apply them live in fire_dispatch (dispatch), fires (settle, cancel) and schedules_scan (catch up,
reconcile, the scan's share of work)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from edgecron.data.queues import Backlog
from edgecron.domain.fires import Fire
from edgecron.domain.schedules import Schedule
from edgecron.domain.task_runs import TaskRun
from edgecron.services import fire_dispatch, fire_overlap, fires, schedules_scan
from edgecron.services.fire_dispatch import DueDispatch
from edgecron.services.scan_work import Work
from edgecron.services.schedules_scan import LateReport, ScheduleScanReport

__all__ = [
    "LateReport",
    "ScheduleScanReport",
    "admit_due",
    "cancel_open",
    "catch_up",
    "dispatch",
    "dispatch_due_schedules",
    "interrupted_work",
    "is_late_first_delivery",
    "reconcile_late",
    "record_owed",
    "schedule_work",
    "settle_if_done",
    "table_work",
]


def dispatch(schedule: Schedule, now: datetime, horizon_ms: int, *, limit: int | None = None) -> DueDispatch:
    """Dispatch the schedule's fires due up to `horizon_ms` (at most `limit`): how many, and the
    schedule as they left it."""
    if limit is None:
        return fire_dispatch.dispatch_due(schedule, now, horizon_ms)
    return fire_dispatch.dispatch_due(schedule, now, horizon_ms, limit=limit)


def admit_due(schedule_id: str, fire_at_ms: int, app_id: str) -> str:
    """A gated Fire's due time came: start it, buffer it or skip it (its overlap policy decides)."""
    return fire_overlap.admit_due(schedule_id, fire_at_ms, app_id)


def schedule_work(now: datetime, report: ScheduleScanReport, horizon_ms: int | None = None) -> Work:
    """The scan's schedule work: due schedules caught up and dispatched, earliest fire first."""
    return schedules_scan.schedule_work(now, report, horizon_ms)


def interrupted_work(now: datetime, report: ScheduleScanReport) -> Work:
    """The scan's reconcile of Fires a crash left half dispatched."""
    return schedules_scan.interrupted_work(now, report)


def table_work(now: datetime) -> Work:
    """The scan's walks of the whole schedules table: the due slots of schedules an earlier release
    wrote without one, and, before a rollback, the next fire times the due walk advanced."""
    return schedules_scan.table_work(now)


def dispatch_due_schedules(now: datetime, *, deadline: float | None = None) -> ScheduleScanReport:
    """Schedules and interrupted Fires until `deadline` (the deploy compensation)."""
    return schedules_scan.dispatch_schedules(now, deadline=deadline)


def catch_up(schedule: Schedule, now: datetime, horizon_ms: int, report: ScheduleScanReport) -> Schedule:
    """Apply the missed-fire policy to a lagging schedule, then dispatch up to the horizon."""
    return schedules_scan.process(schedule, now, horizon_ms, report)


def record_owed(schedule: Schedule, now: datetime) -> Schedule | None:
    """Record MISSED the fire times a schedule about to be paused owes (see schedules_scan)."""
    return schedules_scan.record_owed(schedule, now)


def is_late_first_delivery(run: TaskRun, now_ms: int) -> bool:
    """Whether the reconcile owns this run (a schedule run whose first message was lost)."""
    return schedules_scan.is_late_first_delivery(run, now_ms)


def reconcile_late(
    late: list[TaskRun], now: datetime, *, queues_lost: bool = False, state: Backlog | None = None
) -> tuple[list[TaskRun], LateReport]:
    """Schedule runs no worker took in time: a backlog waits, a lost message follows the policy."""
    return schedules_scan.reconcile_late(late, now, queues_lost=queues_lost, state=state)


def settle_if_done(fire: Fire, now_ms: int) -> str | None:
    """Settle the Fire from its runs if all are final; its final status, or None."""
    return fires.settle_if_done(fire, now_ms)


def cancel_open(
    schedule_id: str,
    now_ms: int,
    reason: str,
    *,
    last_fire_ms: int | None = None,
    keep: Callable[[Fire], bool] | None = None,
) -> int:
    """Cancel the waiting runs of the schedule's open Fires (pause, delete, a timing edit)."""
    return fires.cancel_open(schedule_id, now_ms, reason, last_fire_ms=last_fire_ms, keep=keep)
