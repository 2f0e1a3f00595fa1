"""A Fire follows its Task Runs: COMPLETED when all succeed (cancelled ones aside), FAILED when any
ends failed or dead letter after its retries, CANCELLED when all were cancelled. Settling is a
conditional write, so each Fire counts once toward the schedule's consecutive failures; the third
failed Fire in a row pauses the schedule, notifies the App and publishes to the alerts topic."""

from __future__ import annotations

from collections.abc import Callable

from edgecron.data import fires as fire_data
from edgecron.data import notifications
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.domain import run_states as st
from edgecron.domain.fires import Fire
from edgecron.domain.schedules import PAUSE_REASON_MAX, Schedule
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import (
    FireStatus,
    NotificationKind,
    OperationalEvent,
    RunStatus,
    Source,
)
from edgecron.observability import AUTO_PAUSED, count, logger
from edgecron.services import operational_events
from edgecron.services.fires import billing, turns

PAUSE_AFTER_FAILURES = 3


def fire_status(statuses: list[str]) -> str | None:
    """The final Fire status for its runs' statuses, or None while any run is still open."""
    if any(s not in st.TERMINAL for s in statuses):
        return None
    if any(s in (RunStatus.FAILED, RunStatus.DEAD_LETTER) for s in statuses):
        return FireStatus.FAILED
    if statuses and all(s == RunStatus.CANCELLED for s in statuses):
        return FireStatus.CANCELLED
    return FireStatus.COMPLETED


def run_settled(run: TaskRun, status: str, now_ms: int, schedule: Schedule | None = None) -> None:
    """Called when a schedule run reaches a terminal state; `schedule` is the copy its worker read
    before the request (None: read here if needed)."""
    if run.source_id is None or run.fire_at is None:
        return
    final = fire_status([status]) if run.settles_fire else None
    if final is not None:  # the Fire's only run: its status is the Fire's, no read needed
        if stays_unwritten(run, final):
            if schedule is None:
                schedule = schedule_data.get(run.app_id, run.source_id)
            if schedule is not None and schedule.cron is not None and not schedule.consecutive_failures:
                return  # nothing to count and nothing to finish: the Fire reads as its run
        error = run.last_error if status in (RunStatus.FAILED, RunStatus.DEAD_LETTER) else None
        settled = fire_data.settle_from_run(run.source_id, int(run.fire_at), final, now_ms, error)
        if settled is not None:
            after_settle(settled, final, now_ms, error, schedule=schedule)
        return
    fire = fire_data.get(run.source_id, int(run.fire_at))
    if fire is None or not fire.is_open:
        return
    # a broadcast Fire counts the run; its runs are read once, when the last one is counted
    if fire.paged:
        counted = fire_data.count_settled_runs(fire)
        if counted is None or not counted.all_counted:
            return
        fire = counted
    errors = {run.run_id: run.last_error} if run.last_error else None
    settle_if_done(fire, now_ms, known={run.run_id: status}, errors=errors, schedule=schedule)


STOPPED = "schedule paused or deleted"


def schedule_of(run: TaskRun) -> Schedule | None:
    """A schedule run's Schedule as it is now (strongly consistent): the worker reads it right before
    each request, so no run of a schedule is sent once a pause or delete has returned."""
    if run.source_id is None:
        return None
    return schedule_data.get(run.app_id, run.source_id, consistent=True)


EDITED = "schedule edited: it no longer fires at this time"


def withheld(schedule: Schedule | None, run: TaskRun) -> str | None:
    """Why a schedule run must not be sent now, or None: its schedule is deleted, or paused now or
    at the run's fire time (Schedule.paused_at: a message handled late, after a resume), or a timing
    edit made before the run's fire time has no such fire (Schedule.withholds). An ENDED schedule's
    last fires, dispatched while it still fired, are delivered."""
    if schedule is None or schedule.paused_at(int(run.fire_at or 0)):
        return STOPPED
    if run.fire_at is not None and schedule.withholds(int(run.fire_at), run.created_at):
        return EDITED
    return None


def cancel_claimed(run: TaskRun, now_ms: int, reason: str, schedule: Schedule | None = None) -> None:
    """End a run the caller holds the claim of as cancelled, and settle its Fire."""
    cancelled = run_data.finish(run, RunStatus.CANCELLED, now_ms, error=reason)
    if cancelled is not None:
        run_settled(cancelled, RunStatus.CANCELLED, now_ms, schedule)


def run_final_again(run: TaskRun, now_ms: int) -> None:
    """A message came back for a schedule run that is already final: the worker that finished it may
    have died before settling its Fire (SQS redelivers what a failed invocation did not delete), so
    settle it now if every run is final. A broadcast Fire settles only once each run was counted:
    counting this one again could settle it while another is still running."""
    if run.source != Source.SCHEDULE or run.source_id is None or run.fire_at is None:
        return
    fire = fire_data.get(run.source_id, int(run.fire_at))
    if fire is None or not fire.is_open:
        return
    if fire.paged and not fire.all_counted:
        return
    settle_if_done(fire, now_ms)


def run_waits_for_retry(run: TaskRun) -> None:
    """A schedule run's first attempt ended in a retry: its Fire, if bound to listed Endpoints,
    enters the open-fires index, so a pause finds it however long the retries take."""
    if (
        run.source != Source.SCHEDULE
        or run.source_id is None
        or run.fire_at is None
        or int(run.total_attempts) != 1
    ):
        return
    fire = fire_data.get(run.source_id, int(run.fire_at))
    if fire is not None:
        fire_data.track_open(fire)


def waits_past_recent(fire_at_ms: int, due_ms: int) -> bool:
    """Whether a run of the Fire at `fire_at_ms` left waiting until `due_ms` may outlast the Fires a
    pause reads as recent (those within RECENT_WINDOW_MS of the schedule's latest fire): such a Fire
    must be in the open-fires index for a pause to find it."""
    return due_ms - fire_at_ms >= RECENT_WINDOW_MS


def run_held_until(run: TaskRun, due_ms: int) -> None:
    """Flow control left a schedule run waiting until `due_ms`: if that is long after its fire time,
    its Fire enters the open-fires index (as for a retry), so a pause finds it however long the wait."""
    if run.source != Source.SCHEDULE or run.source_id is None or run.fire_at is None:
        return
    if not waits_past_recent(int(run.fire_at), due_ms):
        return
    fire = fire_data.get(run.source_id, int(run.fire_at))
    if fire is not None and not fire.listed_open:
        fire_data.track_open(fire)


def settle_if_done(
    fire: Fire,
    now_ms: int,
    known: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
    *,
    schedule: Schedule | None = None,
) -> str | None:
    run_ids = fire_data.all_run_ids(fire)
    if run_ids is None:
        return None  # a broadcast Fire still being fanned out: more runs are coming
    runs: dict[str, TaskRun] = {}
    statuses = []
    for start in range(0, len(run_ids), 100):  # stop reading at the first run still open
        chunk = run_ids[start : start + 100]
        unknown = [run_id for run_id in chunk if not (known and run_id in known)]
        if unknown:  # a single-run Fire settles from the run just finished, without reading it
            runs.update({r.run_id: r for r in run_data.get_many(fire.app_id, unknown)})
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
    failed_errors = (
        (errors or {}).get(r) if known and r in known else runs[r].last_error
        for r, status in zip(run_ids, statuses, strict=True)
        if status in (RunStatus.FAILED, RunStatus.DEAD_LETTER)
    )
    error = next((e for e in failed_errors if e), None)
    settled = fire_data.settle(fire, final, now_ms, error)
    if settled is None:
        return None
    after_settle(settled, final, now_ms, error, schedule=schedule)
    return final


def settle_as(fire: Fire, final: str, now_ms: int, reason: str | None, *, unadmitted: bool = False) -> bool:
    """Give a Fire a final status its runs do not decide (MISSED, SKIPPED, a fan-out's end, a gated
    Fire cancelled before it was let start): one conditional write, then the after-settle step, as
    every settle takes it. `unadmitted`: a gated Fire never let start (fails if it was meanwhile).
    False when another writer settled it first."""
    settle = fire_data.settle_unadmitted if unadmitted else fire_data.settle
    settled = settle(fire, final, now_ms, reason)
    if settled is None:
        return False
    after_settle(settled, final, now_ms, reason)
    return True


def stays_unwritten(run: TaskRun, final: str) -> bool:
    """Whether the Fire of a run that settles it may keep its item as dispatched: the run completed
    at its first attempt, so the Fire never entered the open-fires index (a retry or a long wait puts
    it there, and only its settle takes it out), and its status is the run's (Fire.as_run_left_it).
    Its schedule decides the rest: a one-time schedule is finished, and a failure count reset, by the
    settle write."""
    return (
        final == FireStatus.COMPLETED
        and run.settles_fire
        and run.fire_at is not None
        and int(run.total_attempts) == 1
        and not waits_past_recent(int(run.fire_at), int(run.deliver_at))
    )


def after_settle(
    fire: Fire, final: str, now_ms: int, error: str | None, *, schedule: Schedule | None = None
) -> None:
    """Count a settled Fire toward the schedule's consecutive failures (once per Fire); `schedule`
    is a copy the caller has just read."""
    if schedule is None:
        schedule = schedule_data.get(fire.app_id, fire.schedule_id)
    if schedule is None:
        return
    failed = final == FireStatus.FAILED
    # a success only has to reset a counter that is not already zero (saves a write per fire)
    if failed or (final == FireStatus.COMPLETED and int(schedule.consecutive_failures or 0) > 0):
        failures, paused = schedule_data.record_outcome(
            fire.app_id,
            fire.schedule_id,
            failed,
            PAUSE_AFTER_FAILURES,
            now_ms,
            pause_reason=lambda n: auto_pause_reason(n, error),
        )
        if paused:
            _auto_paused(fire, failures, error, now_ms)
    if schedule.cron is None and schedule.next_fire_at is None:
        schedule_data.finish_one_time(fire.app_id, fire.schedule_id, now_ms)
    if fire.overlap is not None:  # it held its schedule's turn: the buffered one is admitted next
        turns.release(fire, now_ms)


def auto_pause_reason(failures: int, error: str | None) -> str:
    """The pause reason an auto-pause stores: the count and the last error, within the API's limit."""
    reason = f"{failures} fires in a row failed: {error or 'no error recorded'}"
    return reason[:PAUSE_REASON_MAX]


def _auto_paused(fire: Fire, failures: int, error: str | None, now_ms: int) -> None:
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
        "pause_reason": auto_pause_reason(failures, error),
    }
    notifications.record(
        fire.app_id, NotificationKind.SCHEDULE_AUTO_PAUSED, f"Schedule paused: {name}", message, data, now_ms
    )
    notifications.publish_alert(
        f"EdgeCron schedule auto-paused: {name}",
        {"app_id": fire.app_id, "kind": NotificationKind.SCHEDULE_AUTO_PAUSED, **data},
    )
    operational_events.publish(
        fire.app_id, OperationalEvent.SCHEDULE_PAUSED, {**data, "name": name, "reason": message}, now_ms
    )
    logger.warning("schedule auto-paused", extra={"schedule_id": fire.schedule_id, "failures": failures})
    cancel_open(  # as a user's pause: the fires still to come wait for the worker's check
        fire.schedule_id,
        now_ms,
        "schedule paused after consecutive failures",
        last_fire_ms=fire.fire_at,
        keep=lambda open_fire: open_fire.fire_at > now_ms and not open_fire.manual,
    )


RECENT_WINDOW_MS = 5 * 60_000  # Fires this close to the schedule's latest fire are read from the table


def cancel_open(
    schedule_id: str,
    now_ms: int,
    reason: str,
    *,
    last_fire_ms: int | None = None,
    keep: Callable[[Fire], bool] | None = None,
) -> int:
    """Cancel the waiting runs of a schedule's open Fires (dispatched ahead, or waiting for a retry)
    and settle those Fires; runs already in flight finish normally. The open-fires index may not show
    a Fire written a moment ago, so the recent ones (around now and `last_fire_ms`, the schedule's
    latest fire) are read from the table. `keep` spares Fires. Returns runs cancelled."""
    recent_from = min(now_ms, last_fire_ms if last_fire_ms is not None else now_ms) - RECENT_WINDOW_MS
    cancelled = 0
    for fire in fire_data.open_fires_of(schedule_id, recent_from_ms=recent_from):
        if keep is None or not keep(fire):
            cancelled += cancel_fire(fire, now_ms, reason)
    return cancelled


def ending_outside_its_worker(fire: Fire) -> Fire:
    """Call before a listed Fire's runs are ended by anything but their worker (a pause, the scan's
    check of late runs, a catch-up): the Fire enters the open-fires index. No message comes back to
    settle it if the caller dies between the runs' end and the Fire's settle; the scan's sweep of
    that index settles it from its runs (due_walk.interrupted_work)."""
    if fire.paged or fire.listed_open or not fire.is_open:
        return fire
    return fire_data.track_open(fire) or fire


def cancel_fire(fire: Fire, now_ms: int, reason: str) -> int:
    """Cancel a Fire's waiting runs and settle it from its runs. A run its dispatch has not created
    yet is written as cancelled first, so a dispatch still under way cannot create and send it."""
    cancelled = ended = pages = 0
    for page in fire_data.run_pages(fire):  # a broadcast Fire's runs, one fan-out page at a time
        pages += 1
        existing = {r.run_id: r for r in run_data.get_many(fire.app_id, [run_id for _, run_id in page])}
        if fire.settled_by_its_run and not fire.as_run_left_it(existing.get(fire.run_ids[0])).is_open:
            return 0  # its run completed: so did the Fire, which kept its dispatched item
        if any(run_id not in existing or existing[run_id].status in st.CANCELLABLE for _, run_id in page):
            fire = ending_outside_its_worker(fire)
        for endpoint_id, run_id in page:
            run = existing.get(run_id)
            if run is None:
                ended += billing.put_cancelled(fire, endpoint_id, run_id, now_ms, reason)
            elif run.status in st.CANCELLABLE and run_data.cancel(run, now_ms, reason):
                cancelled += 1
    fire = counted_runs_ended(fire, cancelled + ended)
    # a gated Fire never let start has no runs to settle from (a broadcast one has none at all)
    if fire.waits_for_admission and settle_as(fire, FireStatus.CANCELLED, now_ms, reason, unadmitted=True):
        return cancelled
    if fire.paged and not pages and fire.started_at is None:
        # a broadcast Fire whose fan-out recorded no page (its dispatch died before handing it on):
        # no run settles it, so it is settled here; a page handed on later finds it settled and stops
        settle_as(fire, FireStatus.CANCELLED, now_ms, reason)
        return cancelled
    settle_if_done(fire, now_ms)
    return cancelled


def counted_runs_ended(fire: Fire, n: int) -> Fire:
    """Runs of a broadcast Fire ended here rather than by a worker (cancelled, missed) are counted
    too, so the runs still in flight settle the Fire when the last of them finishes; the Fire as it
    is now."""
    if fire.paged and n:
        return fire_data.count_settled_runs(fire, n) or fire
    return fire
