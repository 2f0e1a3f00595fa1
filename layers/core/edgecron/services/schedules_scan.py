"""The schedule part of the scan, also run by the deploy compensation: catch up lagging schedules,
dispatch what is due within the look-ahead, and re-dispatch Fires a crash left half done. Reads go
through the sparse `due` index, so their cost grows with the number of due schedules only."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.models import ScheduleModel, TaskRunModel
from edgecron.domain import run_states as st
from edgecron.domain.catchup import CatchUpPlan, plan_catch_up
from edgecron.observability import DUE_SCHEDULES, MISSED_FIRES, count, logger
from edgecron.services import fire_dispatch, fires

GRACE = timedelta(seconds=2)  # a fire this late is dispatched late, not recorded as missed


@dataclass
class ScheduleScanReport:
    due_schedules: int = 0
    fires_dispatched: int = 0
    catch_ups: int = 0
    missed_recorded: int = 0
    missed_left_out: int = 0
    fires_redispatched: int = 0
    stopped_early: bool = False


def dispatch_schedules(
    now: datetime, *, horizon_ms: int | None = None, deadline: float | None = None
) -> ScheduleScanReport:
    """`deadline` (time.monotonic) stops early; what is left is picked up by the next scan."""
    report = ScheduleScanReport()
    now_ms = clock.to_ms(now)
    horizon = horizon_ms if horizon_ms is not None else now_ms + fire_dispatch.lookahead_ms()
    for schedule in schedule_data.all_due(horizon):
        if deadline is not None and time.monotonic() > deadline:
            report.stopped_early = True
            break
        report.due_schedules += 1
        try:
            process(schedule, now, horizon, report)
        except Exception:  # one broken schedule must not stop the others
            logger.exception("schedule dispatch failed", extra={"schedule_id": schedule.schedule_id})
    count(DUE_SCHEDULES, report.due_schedules)
    redispatch_interrupted(now, report)
    return report


def process(schedule: ScheduleModel, now: datetime, horizon_ms: int, report: ScheduleScanReport) -> None:
    """Catch up if the schedule lags, then dispatch its fires due up to the horizon."""
    if schedule.next_fire_at is None or schedule.status != "ACTIVE":
        return
    cutoff = now - GRACE
    if schedule.next_fire_at < clock.to_ms(cutoff):
        plan = plan_catch_up(
            fire_dispatch.spec_of(schedule),
            clock.from_ms(schedule.at) if schedule.cron is None and schedule.at is not None else None,
            clock.from_ms(schedule.next_fire_at),
            cutoff,
            "SKIP" if schedule.missed_policy == "SKIP" else "RUN_ONCE",
        )
        if plan is not None:
            if not apply_catch_up(schedule, plan, now):
                return  # someone else moved the schedule first; they own this pass
            report.catch_ups += 1
            report.missed_recorded += len(plan.missed)
            report.missed_left_out += plan.left_out
    report.fires_dispatched += fire_dispatch.dispatch_due(schedule, now, horizon_ms)


def apply_catch_up(schedule: ScheduleModel, plan: CatchUpPlan, now: datetime) -> bool:
    """Record the MISSED Fires (existing rows are never overwritten), then move the schedule with a
    CAS: to the one fire to run (RUN_ONCE, dispatched right after by the normal path) or past now."""
    now_ms = clock.to_ms(now)
    expected = int(schedule.next_fire_at)
    for missed_at in plan.missed:
        fire_data.create(
            schedule.schedule_id,
            clock.to_ms(missed_at),
            schedule.app_id,
            [],
            [],
            now_ms,
            status=fire_data.MISSED,
            error="missed: not dispatched in time (outage or deploy gap)",
        )
    if plan.dispatch is not None:
        target: int | None = clock.to_ms(plan.dispatch)
    else:
        target = clock.to_ms(plan.next_fire) if plan.next_fire else None
    one_time_skipped = schedule.cron is None and plan.dispatch is None
    moved = schedule_data.catch_up_move(
        schedule, expected, target, plan.left_out, now_ms, finish=one_time_skipped
    )
    if moved:
        count(MISSED_FIRES, plan.missed_total)
        logger.warning(
            "schedule caught up",
            extra={
                "schedule_id": schedule.schedule_id,
                "missed_recorded": len(plan.missed),
                "left_out": plan.left_out,
                "dispatch": clock.iso(plan.dispatch),
                "policy": schedule.missed_policy,
            },
        )
    return moved


def redispatch_interrupted(now: datetime, report: ScheduleScanReport) -> None:
    """Fires created but never dispatched (a crash between steps a and c) get their runs now; a Fire
    whose schedule is gone or paused is cancelled instead."""
    now_ms = clock.to_ms(now)
    for shard in range(get_settings().shards):
        for fire in fire_data.interrupted(str(shard), now_ms - fire_dispatch.INTERRUPTED_AFTER_MS):
            schedule = schedule_data.get(fire.app_id, fire.schedule_id)
            if schedule is None or schedule.status != "ACTIVE":
                fire_data.settle(fire, fire_data.CANCELLED, now_ms, "schedule deleted or paused")
                continue
            fire_dispatch.dispatch_fire(schedule, int(fire.fire_at), now_ms)
            fires.settle_if_done(fire, now_ms)
            report.fires_redispatched += 1


def is_late_first_delivery(run: TaskRunModel, now_ms: int) -> bool:
    """A schedule run never attempted whose fire time has passed, found by the reconcile because its
    message was lost (an outage, a purged queue): it follows the missed-fire policy, not a late run."""
    return (
        run.source == "schedule"
        and run.status == st.PENDING
        and int(run.total_attempts) == 0
        and run.fire_at is not None
        and int(run.fire_at) < now_ms - int(GRACE.total_seconds() * 1000)
    )


def settle_late_fires(late: list[TaskRunModel], now: datetime) -> list[TaskRunModel]:
    """Apply the missed-fire policy to Fires whose deliveries never started, as the catch-up would:
    RUN_ONCE keeps the most recent of them if it is still the schedule's latest fire time before now
    and no later Fire has run or been dispatched; everything else becomes MISSED (runs cancelled).
    Returns the runs to enqueue."""
    now_ms = clock.to_ms(now)
    cutoff_ms = clock.to_ms(now - GRACE)
    by_fire: dict[tuple[str, str, int], list[TaskRunModel]] = defaultdict(list)
    for run in late:
        by_fire[(run.app_id, str(run.source_id), int(run.fire_at))].append(run)  # type: ignore[arg-type]
    keep: list[TaskRunModel] = []
    for app_id, schedule_id in {(a, s) for a, s, _ in by_fire}:
        fire_times = sorted(at for (a, s, at) in by_fire if (a, s) == (app_id, schedule_id))
        newest = fire_times[-1]
        schedule = schedule_data.get(app_id, schedule_id)
        run_newest = False
        if schedule is not None and schedule.status == "ACTIVE" and schedule.missed_policy == "RUN_ONCE":
            following = fire_dispatch.next_after_ms(schedule, newest)
            still_latest = following is None or following > cutoff_ms
            run_newest = still_latest and not fire_data.any_after(schedule_id, newest, now_ms)
        for fire_at in fire_times:
            runs = by_fire[(app_id, schedule_id, fire_at)]
            if run_newest and fire_at == newest:
                keep.extend(runs)
                continue
            reason = "missed: the fire's delivery could not start in time (outage or lost message)"
            for run in runs:
                run_data.cancel(run, now_ms, reason)
            fire = fire_data.get(schedule_id, fire_at)
            if fire is not None and fire_data.settle(fire, fire_data.MISSED, now_ms, reason):
                count(MISSED_FIRES)
    return keep
