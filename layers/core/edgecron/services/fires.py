"""A Fire follows its Task Runs: COMPLETED when all succeed (cancelled ones aside), FAILED when any
ends failed or dead letter after its retries, CANCELLED when all were cancelled. Settling is a
conditional write, so each Fire counts once toward the schedule's consecutive failures; the third
failed Fire in a row pauses the schedule, notifies the App and publishes to the alerts topic."""

from __future__ import annotations

from edgecron.data import fires as fire_data
from edgecron.data import notifications
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.models import FireModel, TaskRunModel
from edgecron.domain import run_states as st
from edgecron.observability import AUTO_PAUSED, count, logger

PAUSE_AFTER_FAILURES = 3


def fire_status(statuses: list[str]) -> str | None:
    """The final Fire status for its runs' statuses, or None while any run is still open."""
    if any(s not in st.TERMINAL for s in statuses):
        return None
    if any(s in (st.FAILED, st.DEAD_LETTER) for s in statuses):
        return fire_data.FAILED
    if statuses and all(s == st.CANCELLED for s in statuses):
        return fire_data.CANCELLED
    return fire_data.COMPLETED


def run_settled(run: TaskRunModel, status: str, now_ms: int) -> None:
    """Called when a schedule run reaches a terminal state."""
    if run.source_id is None or run.fire_at is None:
        return
    fire = fire_data.get(run.source_id, int(run.fire_at))
    if fire is not None and fire.status in fire_data.OPEN:
        settle_if_done(fire, now_ms, known={run.run_id: status})


def settle_if_done(fire: FireModel, now_ms: int, known: dict[str, str] | None = None) -> str | None:
    run_ids = fire_data.all_run_ids(fire)
    if run_ids is None:
        return None  # a broadcast Fire still being fanned out: more runs are coming
    runs: dict[str, TaskRunModel] = {}
    statuses = []
    for start in range(0, len(run_ids), 100):  # stop reading at the first run still open
        chunk = run_ids[start : start + 100]
        runs.update({r.run_id: r for r in run_data.get_many(chunk)})
        for run_id in chunk:
            if known and run_id in known:
                statuses.append(known[run_id])
            elif run_id in runs:
                statuses.append(runs[run_id].status)
            else:
                return None  # not created yet: dispatch is still going on
            if statuses[-1] not in st.TERMINAL:
                return None
    final = fire_status(statuses)
    if final is None:
        return None
    error = next(
        (
            runs[r].last_error
            for r in run_ids
            if r in runs and runs[r].status in (st.FAILED, st.DEAD_LETTER) and runs[r].last_error
        ),
        None,
    )
    if not fire_data.settle(fire, final, now_ms, error):
        return None
    after_settle(fire, final, now_ms, error)
    return final


def after_settle(fire: FireModel, final: str, now_ms: int, error: str | None) -> None:
    """Count a settled Fire toward the schedule's consecutive failures (once per Fire)."""
    schedule = schedule_data.get(fire.app_id, fire.schedule_id)
    if schedule is None:
        return
    failed = final == fire_data.FAILED
    # a success only has to reset a counter that is not already zero (saves a write per fire)
    if failed or (final == fire_data.COMPLETED and int(schedule.consecutive_failures or 0) > 0):
        failures, paused = schedule_data.record_outcome(
            fire.app_id, fire.schedule_id, failed, PAUSE_AFTER_FAILURES, now_ms
        )
        if paused:
            _auto_paused(fire, failures, error, now_ms)
    if schedule.cron is None and schedule.next_fire_at is None:
        schedule_data.finish_one_time(fire.app_id, fire.schedule_id, now_ms)


def _auto_paused(fire: FireModel, failures: int, error: str | None, now_ms: int) -> None:
    count(AUTO_PAUSED)
    schedule = schedule_data.get(fire.app_id, fire.schedule_id)
    name = (schedule.name if schedule else None) or fire.schedule_id
    message = (
        f"{failures} fires in a row failed, so the schedule was paused. Check its endpoints, then resume it."
    )
    data = {
        "schedule_id": fire.schedule_id,
        "failures": failures,
        "last_error": error,
        "last_fire_time": fire.fire_at,
    }
    notifications.record(
        fire.app_id, "SCHEDULE_AUTO_PAUSED", f"Schedule paused: {name}", message, data, now_ms
    )
    notifications.publish_alert(
        f"EdgeCron schedule auto-paused: {name}",
        {"app_id": fire.app_id, "kind": "SCHEDULE_AUTO_PAUSED", **data},
    )
    logger.warning("schedule auto-paused", extra={"schedule_id": fire.schedule_id, "failures": failures})
    cancel_open(fire.schedule_id, now_ms, "schedule paused after consecutive failures")


def cancel_open(schedule_id: str, now_ms: int, reason: str) -> int:
    """Cancel the waiting runs of a schedule's open Fires (dispatched ahead, or waiting for a retry)
    and settle those Fires; runs already in flight finish normally. Returns runs cancelled."""
    cancelled = 0
    for fire in fire_data.open_fires_of(schedule_id):
        for run in run_data.get_many([r for page in fire_data.run_id_pages(fire) for r in page]):
            if run.status in st.CANCELLABLE and run_data.cancel(run, now_ms, reason):
                cancelled += 1
        settle_if_done(fire, now_ms)
    return cancelled
