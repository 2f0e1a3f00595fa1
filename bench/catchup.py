"""Benchmark 4: catch-up cost per schedule after outages of 1 minute, 1 day and 30 days.

The planner (`edgecron.domain.catchup.plan_catch_up`) is timed with `time.process_time` (CPU, not wall);
the target is <= 50 ms per schedule and flat, i.e. a 30-day outage costs about what a 1-minute one does.
The full apply (`services.fires.due_walk.process`: record the MISSED fires, CAS the schedule, dispatch
the RUN_ONCE fire) runs once per case against moto and is reported in AWS requests and write units,
which are what it costs on AWS; its CPU time here includes moto's own work and is shown only as context."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from bench.inproc import Env
from bench.report import Row, verdict

if TYPE_CHECKING:
    from edgecron.domain.catchup import MissedPolicy

TARGET_MS = 50.0
# "flat": across outages the plan costs within FLAT_SLACK_MS of each other, or within FLAT_FACTOR times
FLAT_FACTOR = 2.0
FLAT_SLACK_MS = 1.0
CRONS = (("every second", "* * * * * *"), ("every minute", "* * * * *"))
OUTAGES = (
    ("1 minute", timedelta(minutes=1)),
    ("1 day", timedelta(days=1)),
    ("30 days", timedelta(days=30)),
    ("365 days", timedelta(days=365)),  # beyond the target's range: shows the trend
)
JUDGED_OUTAGES = ("1 minute", "1 day", "30 days")  # the ones judged against the target
APPLY_OUTAGES = JUDGED_OUTAGES  # the ones also applied against moto


def plan_cpu_ms(
    expression: str, outage: timedelta, policy: MissedPolicy, repeats: int
) -> tuple[float, dict[str, Any]]:
    """Mean CPU milliseconds of one plan, and what the plan decided."""
    from edgecron.domain.catchup import plan_catch_up
    from edgecron.domain.cron import next_fire, parse_cron

    now = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    spec = parse_cron(expression, "UTC")
    start = next_fire(spec, now - outage - timedelta(seconds=1))
    assert start is not None
    plan = plan_catch_up(spec, None, start, now, policy)
    t0 = time.process_time()
    for _ in range(repeats):
        plan_catch_up(spec, None, start, now, policy)
    cpu_ms = (time.process_time() - t0) / repeats * 1000
    shape: dict[str, Any] = {"catch_up": plan is not None}
    if plan is not None:
        shape |= {
            "missed_recorded": len(plan.missed),
            "left_out": plan.left_out,
            "runs": plan.dispatch is not None,
        }
    return cpu_ms, shape


def apply_once(env: Env, app_id: str, expression: str, outage: timedelta) -> dict[str, Any]:
    """One schedule, down for `outage`, caught up by the scan's per-schedule step against moto."""
    from edgecron import clock, ids
    from edgecron.data import schedules as schedule_data
    from edgecron.data.models import ScheduleModel
    from edgecron.domain.cron import next_fire, parse_cron
    from edgecron.domain.schedules import Schedule
    from edgecron.services.fires import due_walk

    # two days ahead: the runs it creates stay out of every other benchmark's scan window
    now = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
    spec = parse_cron(expression, "UTC")
    start = next_fire(spec, now - outage - timedelta(seconds=1))
    assert start is not None
    now_ms = clock.to_ms(now)
    schedule = Schedule(
        app_id=app_id,
        schedule_id=ids.new_id("sch", now_ms),
        name="bench catch-up",
        cron=expression,
        timezone="UTC",
        endpoint_ids=("ep_bench_catchup_none",),  # the run is created; nothing is delivered here
        payload={"kind": "bench"},
        created_at=now_ms - int(outage.total_seconds() * 1000),
        updated_at=clock.to_ms(start) - 120_000,  # last written before the outage, as the scan left it
        next_fire_at=clock.to_ms(start),
    )
    schedule_data.put_new(schedule)  # ACTIVE with a next fire time: in the due index
    # as the scan reads it after the outage: its walk's mark is from before, so the stored time stands
    stored = schedule_data.get(app_id, schedule.schedule_id, consistent=True)
    assert stored is not None
    walked_to = clock.to_ms(start) - 1  # the mark the walk left before the outage
    schedule = stored
    report = due_walk.ScheduleScanReport()
    clock.set_clock(clock.FixedClock(now))
    try:
        with env.window() as usage:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            # as the scan's due walk applies it; horizon = now: no look-ahead dispatch
            due_walk.process(schedule, now, now_ms, report, walked_to=walked_to)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    finally:
        clock.set_clock(clock.SystemClock())
        env.conftest.drain_queues()
        ScheduleModel(app_id=app_id, schedule_id=schedule.schedule_id).update(
            actions=[ScheduleModel.due_shard.remove(), ScheduleModel.status.set("PAUSED")]
        )
    ddb = usage.total("dynamodb")
    return {
        "missed_recorded": report.missed_recorded,
        "missed_left_out": report.missed_left_out,
        "fires_dispatched": report.fires_dispatched,
        "dynamodb_requests": ddb.requests,
        "wru": ddb.wru,
        "rru": ddb.rru,
        "requests_total": sum(v.requests for v in usage.ops.values()),
        "cpu_ms_with_moto": round(cpu * 1000, 1),
        "wall_ms_with_moto": round(wall * 1000, 1),
    }


def run(
    env: Env | None, *, repeats: int, apply: tuple[str, ...] = APPLY_OUTAGES
) -> tuple[list[Row], dict[str, Any]]:
    """Time the planner for every case; apply the catch-up against moto for the outages in `apply`."""
    rows: list[Row] = []
    cases: list[dict[str, Any]] = []
    app_id = env.new_app("bench-catchup")[0] if env is not None and apply else ""
    for label, expression in CRONS:
        figures = []
        for outage_label, outage in OUTAGES:
            policies: tuple[MissedPolicy, ...] = ("RUN_ONCE", "SKIP")
            for policy in policies:
                cpu_ms, shape = plan_cpu_ms(expression, outage, policy, repeats)
                case: dict[str, Any] = {
                    "cron": label,
                    "outage": outage_label,
                    "policy": policy,
                    "plan_cpu_ms": round(cpu_ms, 4),
                    **shape,
                }
                if policy == "RUN_ONCE" and outage_label in JUDGED_OUTAGES:
                    figures.append(cpu_ms)
                    if env is not None and outage_label in apply:
                        case["apply"] = apply_once(env, app_id, expression, outage)
                cases.append(case)
        flat = max(figures) - min(figures) <= FLAT_SLACK_MS or max(figures) <= FLAT_FACTOR * min(figures)
        worst = max(figures)
        longest = next(c["plan_cpu_ms"] for c in cases if c["cron"] == label and c["outage"] == "365 days")
        rows.append(
            Row(
                "catch-up",
                f"plan, {label} (1 min / 1 day / 30 days)",
                " / ".join(f"{f:.2f}" for f in figures) + f" ms CPU (365 days: {longest:.2f})",
                f"<= {TARGET_MS:.0f} ms, flat",
                verdict(worst <= TARGET_MS and flat),
            )
        )
        if apply and env is not None:
            labels = [o for o, _ in OUTAGES if o in apply]
            applied = [c["apply"] for c in cases if c["cron"] == label and "apply" in c]
            rows.append(
                Row(
                    "catch-up",
                    f"apply, {label} ({' / '.join(labels)})",
                    " / ".join(f"{a['dynamodb_requests']} req {a['wru']:.0f} WRU" for a in applied),
                    "bounded by the 100-row cap",
                    verdict(max(a["dynamodb_requests"] for a in applied) <= 2 * 100 + 20),
                )
            )
    return rows, {
        "repeats": repeats,
        "target_ms": TARGET_MS,
        "flat": f"max - min <= {FLAT_SLACK_MS} ms or max <= {FLAT_FACTOR} x min",
        "cases": cases,
    }
