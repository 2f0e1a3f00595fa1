"""Dispatch one schedule fire, in an order that survives a crash between any two steps:
(a) read the schedule fresh (strongly consistent) and create the Fire from it only while it is
ACTIVE at this fire time (a conditional put: the exactly-once anchor), (b) create its Task Runs
(deterministic ids, conditional), read the schedule again and send them only if it is still
ACTIVE and still fires at this time, (c) advance the schedule with a compare-and-set (last). Until
(c) the schedule stays due at this fire time, so a crash anywhere before it is re-driven by the next
scan, which finds the same Fire and the same runs (a second message for a run is absorbed by the
worker's claim). The scan's (c) for a schedule whose due entry stays on its day or hour wheel slot
writes nothing: the due walk's mark, moved once the tick's fires are sent, is its advance
(schedule_data.advance). A pause or delete that returned before (a) leaves no Fire; one
that returned before the re-read in (b) leaves its runs cancelled (the pause cancels the runs that
exist by then, writing those not yet created as cancelled; the re-read cancels the rest).

A schedule bound to every Endpoint of its App (endpoint_ids empty) is dispatched by the fan-out
function instead of (b): the Fire is created `paged` and its Endpoints are walked page by page
(services/fanout.py), so no item grows with the number of Endpoints; a crash before its first page
is handed on is re-driven from the `open_fire_keys` index (due_walk.interrupted_work)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import fanout_pages
from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.queues import (
    DeliveryMessage,
    send_deliveries,
    send_fire_fanout,
)
from edgecron.domain import jitter
from edgecron.domain import run_states as st
from edgecron.domain.fires import Fire
from edgecron.domain.schedules import Schedule
from edgecron.domain.vocabulary import FireStatus, Source
from edgecron.domain.wake import wake_entry
from edgecron.observability import FIRES, count, logger
from edgecron.services import quota
from edgecron.services.fires import billing, settle, turns
from edgecron.services.task_runs import enqueue_plan

QUOTA_EXCEEDED = "monthly quota exceeded: the fire was not run"
MAX_FIRES_PER_SCHEDULE_PER_TICK = 120  # every-second schedules: one look-ahead window (~70 fires)
INTERRUPTED_AFTER_MS = 30_000  # a Fire open this long without started_at was interrupted mid-dispatch
STOPPED = "schedule paused or deleted before the fire was dispatched"

run_id_for = fire_data.run_id


@dataclass
class DispatchResult:
    fire: Fire | None  # None: refused, the schedule is no longer ACTIVE at this fire time
    created: bool
    enqueued: int

    @property
    def refused(self) -> bool:
        return self.fire is None


def dispatch_fire(
    schedule: Schedule, fire_at_ms: int, now_ms: int, *, outbox: list[DeliveryMessage] | None = None
) -> DispatchResult:
    """Steps (a)-(b) for one fire time; idempotent. `schedule` is the copy the caller has just read
    fresh or written itself. One that no longer fires at this time makes no new Fire; a Fire written
    while it did goes on (the scan's re-dispatch of an interrupted Fire), or is cancelled if the
    schedule stopped. With an `outbox`, the delivery messages of its runs are added to it instead of
    sent: the caller sends them, and only then advances the schedule."""
    if not schedule.fires_next_at(fire_at_ms):
        return _existing(schedule, fire_at_ms, now_ms)
    paged = schedule.is_broadcast
    endpoint_ids = [] if paged else list(schedule.endpoint_ids)
    run_ids = [run_id_for(schedule.schedule_id, fire_at_ms, ep) for ep in endpoint_ids]
    status, error = FireStatus.SCHEDULED, None
    over_quota = quota.over_quota(schedule.app_id, now_ms)  # only used if this call creates the Fire
    if over_quota:
        endpoint_ids, run_ids = [], []
        status, error = FireStatus.FAILED, QUOTA_EXCEEDED
    jitter_sec = int(schedule.jitter_sec or 0)
    due_at_ms = jitter.due_at_ms(schedule.schedule_id, fire_at_ms, jitter_sec, now_ms) if jitter_sec else None
    fire, created = fire_data.create(
        schedule.schedule_id,
        fire_at_ms,
        schedule.app_id,
        endpoint_ids,
        run_ids,
        now_ms,
        status=status,
        error=error,
        paged=paged and not over_quota,
        due_at_ms=due_at_ms,
        overlap=schedule.fire_overlap,
        waits_long=due_at_ms is not None and settle.waits_past_recent(fire_at_ms, due_at_ms),
    )
    if created and over_quota:  # not run, not billed, not retried; counts toward auto-pause
        settle.after_settle(fire, FireStatus.FAILED, now_ms, error)
        return DispatchResult(fire, created, 0)
    if created:
        count(FIRES)
    return _go_on(schedule, fire, created, now_ms, outbox)


def trigger_fire(schedule: Schedule, now_ms: int) -> Fire | None:
    """One manual Fire now, outside the cron times, which does not move the schedule. Its fire time
    is the trigger's millisecond, never a whole second (every cron fire time is one), and the next
    free millisecond when another trigger took it: the conditional put keeps two triggers apart.
    None when the schedule, read fresh, is not ACTIVE."""
    read = schedule_data.reload(schedule)
    if read is None or not read.is_active:
        return None
    schedule = read
    paged = schedule.is_broadcast
    endpoint_ids = [] if paged else list(schedule.endpoint_ids)
    over_quota = quota.over_quota(schedule.app_id, now_ms)
    status, error = (FireStatus.FAILED, QUOTA_EXCEEDED) if over_quota else (FireStatus.SCHEDULED, None)
    fire_at_ms = now_ms
    while True:
        if fire_at_ms % 1000 == 0 or fire_at_ms == schedule.next_fire_at:
            fire_at_ms += 1
            continue
        run_ids = (
            [] if over_quota else [run_id_for(schedule.schedule_id, fire_at_ms, ep) for ep in endpoint_ids]
        )
        fire, created = fire_data.create(
            schedule.schedule_id,
            fire_at_ms,
            schedule.app_id,
            [] if over_quota else endpoint_ids,
            run_ids,
            now_ms,
            status=status,
            error=error,
            paged=paged and not over_quota,
            manual=True,
        )
        if created:
            break
        fire_at_ms += 1
    if over_quota:
        settle.after_settle(fire, FireStatus.FAILED, now_ms, error)
        return fire
    count(FIRES)
    if paged:
        _fan_out(fire)
    else:
        _dispatch_listed(schedule, fire, True, now_ms)
    return fire


def _existing(schedule: Schedule, fire_at_ms: int, now_ms: int) -> DispatchResult:
    """The schedule (as just read) no longer fires at this time: no new Fire, but one created while
    it did (by a dispatch that died, or a concurrent one) goes on from where it is, or is cancelled
    if the schedule stopped."""
    fire = fire_data.get(schedule.schedule_id, fire_at_ms)
    if fire is None:
        return DispatchResult(None, False, 0)
    if not schedule.is_active:
        if fire.is_open:
            settle.cancel_fire(fire, now_ms, STOPPED)
        return DispatchResult(fire, False, 0)
    return _go_on(schedule, fire, False, now_ms)


def _go_on(
    schedule: Schedule, fire: Fire, created: bool, now_ms: int, outbox: list[DeliveryMessage] | None = None
) -> DispatchResult:
    if not fire.is_open:
        return DispatchResult(fire, created, 0)  # settled by an earlier attempt
    if fire.waits_for_admission:  # its overlap policy decides at its due time
        turns.send_gate(fire, now_ms, near_only=not created)
        return DispatchResult(fire, created, 0)
    if fire.overlap is not None:
        start_admitted(schedule, fire, now_ms)
        return DispatchResult(fire, created, 0)
    if fire.paged:
        if fire.started_at is not None:
            return DispatchResult(fire, created, 0)  # fanned out by an earlier attempt
        last_progress = max(fire.created_at, (fire.progress_at or 0))
        if not created and now_ms - last_progress < INTERRUPTED_AFTER_MS:
            return DispatchResult(fire, created, 0)  # the fan-out function is dispatching it
        _fan_out(fire)
        return DispatchResult(fire, created, 0)
    return _dispatch_listed(schedule, fire, created, now_ms, outbox)


def start_admitted(schedule: Schedule, fire: Fire, now_ms: int, *, admitted_now: bool = False) -> None:
    """Deliver a Fire its overlap policy let start: its runs, due at its due time (or at its
    admission, for one that waited), or its fan-out. Idempotent, like any re-drive: runs have
    deterministic ids, a fan-out page is recorded once."""
    if fire.paged:
        last_progress = max((fire.admitted_at or 0), (fire.progress_at or 0))
        if fire.started_at is None and (admitted_now or now_ms - last_progress >= INTERRUPTED_AFTER_MS):
            _fan_out(fire)
        return
    _dispatch_listed(schedule, fire, False, now_ms)


def _fan_out(fire: Fire) -> None:
    """Hand a broadcast Fire to the fan-out function, from its first page not yet continued."""
    point = fanout_pages.resume_point(fanout_pages.fire_owner(fire.schedule_id, fire.fire_at))
    if point is not None:
        page, cursor = point
        send_fire_fanout(fire.schedule_id, fire.fire_at, fire.app_id, cursor=cursor, page=page)


def _dispatch_listed(
    schedule: Schedule,
    fire: Fire,
    created: bool,
    now_ms: int,
    outbox: list[DeliveryMessage] | None = None,
) -> DispatchResult:
    """Create the Fire's runs (each unless it exists), then send them (or add them to `outbox`) if
    the schedule, read again, still fires at this time. Sent again when a dispatch that died is
    re-driven: a run already delivered or under way ignores the second message."""
    fire_at_ms = fire.fire_at
    due_ms = fire.due_ms
    send_now, wake_at = run_plan(fire, now_ms)
    messages = []
    alone = fire.settled_by_its_run
    for endpoint_id, run_id in zip(fire.endpoint_ids, fire.run_ids, strict=True):
        put_fire_run(
            schedule,
            fire_at_ms,
            endpoint_id,
            wake_at,
            now_ms,
            due_ms=due_ms,
            settles_fire=alone,
            bills=billing.bills(fire, endpoint_id),
        )
        messages.append(DeliveryMessage(run_id, schedule.app_id, due_ms=due_ms))
    current = schedule_data.get(schedule.app_id, schedule.schedule_id, consistent=True)
    if (
        current is None
        or not current.is_active
        or (not fire.manual and _edited_away(current, fire_at_ms, now_ms))
    ):
        _cancel_runs(fire, now_ms)  # paused, deleted or re-timed meanwhile: these runs are never delivered
        return DispatchResult(fire, created, 0)
    if send_now and outbox is not None:
        outbox.extend(messages)
    elif send_now:
        send_fire_runs(messages)
    if fire.started_at is None:  # a gated Fire: dispatched now that its overlap policy admitted it
        fire_data.mark_dispatched(fire, now_ms)
    return DispatchResult(fire, created, len(messages) if send_now else 0)


def send_fire_runs(messages: list[DeliveryMessage]) -> None:
    """Send the delivery messages of fires' runs; a message SQS did not take is found by the scan's
    check of recent runs, as a lost one is."""
    failed = send_deliveries(messages)
    if failed:
        logger.warning("fire runs not enqueued; redispatched by the scan", extra={"count": len(failed)})


def _edited_away(current: Schedule, fire_at_ms: int, now_ms: int) -> bool:
    """A timing edit that landed during this dispatch and no longer fires at this (future) time: the
    edit cancels the Fires it finds, and this one may have been written after it looked. `current`
    is read with its stored timing: a wheel schedule's may lag, so the cron expression decides."""
    if current.next_fire_at == fire_at_ms or fire_at_ms <= now_ms:
        return False
    return not current.has_fire_at(fire_at_ms)


def run_plan(fire: Fire, now_ms: int) -> tuple[bool, int | None]:
    """(send now?, wake time) of the Fire's runs. Runs sent now and due at the fire time get no
    `wake` entry: their ids sort by the fire time, so the scan's check of recent runs reaches one
    when its entry would have woken it (REDISPATCH_AFTER_SEC after its due time, less the look-ahead)
    and finds a lost message then, which follows the missed-fire policy. The runs of a jittered or
    admitted Fire are due after the time their ids sort by, and keep the entry."""
    due = fire.due_ms
    send_now = enqueue_plan(due, now_ms)[0]
    settings = get_settings()
    return send_now, wake_entry(
        due,
        sent=send_now,
        checked_later=due == fire.fire_at,
        redispatch_after_ms=settings.redispatch_after_ms,
    )


def put_fire_run(
    schedule: Schedule,
    fire_at_ms: int,
    endpoint_id: str,
    wake_at_ms: int | None,
    now_ms: int,
    *,
    due_ms: int | None = None,
    settles_fire: bool = False,
    bills: bool = False,
) -> bool:
    """The Task Run of one fire at one Endpoint (listed or fanned out), unless it exists; True if
    this call created it. It is due at `due_ms` (the Fire's jittered or admitted time), else at
    the fire time; it keeps the fire time, which names its Fire. The run that `bills` its fire counts
    it with its put (services/fires/billing.py)."""
    run = run_data.new_run(
        run_id=run_id_for(schedule.schedule_id, fire_at_ms, endpoint_id),
        app_id=schedule.app_id,
        endpoint_id=endpoint_id,
        source=Source.SCHEDULE,
        source_id=schedule.schedule_id,
        payload=schedule.payload,
        deliver_at_ms=fire_at_ms if due_ms is None else due_ms,
        wake_at_ms=wake_at_ms,
        now_ms=now_ms,
        fire_at=fire_at_ms,
        retry_policy_id=schedule.retry_policy_id,
        settles_fire=settles_fire,
    )
    return billing.put_run(run, now_ms, billing=bills)


def _cancel_runs(fire: Fire, now_ms: int) -> None:
    fire = settle.ending_outside_its_worker(fire)
    for run in run_data.get_many(fire.app_id, list(fire.run_ids)):
        if run.status in st.CANCELLABLE:
            run_data.cancel(run, now_ms, STOPPED)
    settle.settle_if_done(fire, now_ms)


@dataclass(frozen=True)
class DueDispatch:
    handled: int  # fires dispatched and advanced past
    schedule: Schedule  # as the last read or advance left it (the caller's copy if none happened)


def dispatch_due(
    schedule: Schedule, now: datetime, horizon_ms: int, *, limit: int = MAX_FIRES_PER_SCHEDULE_PER_TICK
) -> DueDispatch:
    """Dispatch the fires of `schedule` due up to `horizon_ms` (at most `limit`), advancing it after
    each (step c); stops when another writer moved the schedule first. The first fire is built from
    a fresh read of the schedule; each next one from the copy the advance before it returned."""
    now_ms = clock.to_ms(now)
    handled = 0
    while schedule.next_fire_at is not None and schedule.next_fire_at <= horizon_ms and handled < limit:
        fire_at = schedule.next_fire_at
        if handled == 0:  # step (a) reads it fresh; each later fire goes by the advance's copy
            read = schedule_data.reload(schedule)
            if read is None:
                break  # deleted: its delete cancelled its Fires
            schedule = read
            if not schedule.fires_next_at(fire_at):
                break  # paused, or moved on by another dispatcher (which finished this fire time,
                # or recorded it MISSED): the next scan reads it again
        if dispatch_fire(schedule, fire_at, now_ms).refused:
            break
        advanced = schedule_data.advance(schedule, fire_at, schedule.next_after(fire_at), now_ms)
        if advanced is None:
            break
        schedule = advanced
        handled += 1
    return DueDispatch(handled, schedule)
