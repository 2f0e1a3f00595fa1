"""The schedule part of the scan, also run by the deploy compensation: catch up lagging schedules,
dispatch what is due within the look-ahead, and re-dispatch Fires a crash left half done. Reads go
through the sparse `due` index, so their cost grows with the number of due schedules only."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import fires as fire_data
from edgecron.data import queues as queue_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.queues import DeliveryMessage
from edgecron.domain import cron as cron_rules
from edgecron.domain import due_slots
from edgecron.domain import run_states as st
from edgecron.domain.catchup import (
    CatchUpPlan,
    late_run_wake,
    plan_catch_up,
    plan_late_fires,
    policy_of,
    split_started,
)
from edgecron.domain.cron import CronError
from edgecron.domain.fires import Fire
from edgecron.domain.schedules import Schedule
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import FireStatus, MissedPolicy, RunStatus, Source
from edgecron.observability import DUE_SCHEDULES, MISSED_FIRES, count, logger
from edgecron.services import operational_events
from edgecron.services.fires import billing, dispatch, settle
from edgecron.services.scan_work import Budget, Work, first_shard, item_failed, run_fairly

GRACE = timedelta(seconds=2)  # a fire this late is dispatched late, not recorded as missed


@dataclass
class ScheduleScanReport:
    due_schedules: int = 0
    fires_dispatched: int = 0
    catch_ups: int = 0
    missed_recorded: int = 0
    missed_left_out: int = 0
    fires_redispatched: int = 0
    fires_settled_late: int = 0  # dispatched Fires a lost write had left open, settled from their runs
    item_failures: int = 0
    stopped_early: bool = False
    held_from: int | None = None  # the earliest wheel slot (met at) or fire time of a schedule that failed
    owed_unrecorded: bool = False  # a failed schedule the walk moves could not record the fire it owes

    def hold(self, at_ms: int | None, *, unrecorded: bool = False) -> None:
        """Keep the due walk's mark before `at_ms`, so the next tick meets the failed schedule again;
        `unrecorded`: for as long as it takes (the schedule does not record the fire it owes)."""
        if at_ms is not None and (self.held_from is None or at_ms < self.held_from):
            self.held_from = at_ms
        self.owed_unrecorded = self.owed_unrecorded or (unrecorded and at_ms is not None)


def dispatch_schedules(
    now: datetime, *, horizon_ms: int | None = None, deadline: float | None = None
) -> ScheduleScanReport:
    """Schedules and interrupted Fires, sharing the time fairly; `deadline` (clock.monotonic) stops
    early, and what is left is picked up by the next scan."""
    report = ScheduleScanReport()
    budget = Budget.until(deadline) if deadline is not None else Budget(lambda: float("inf"))
    left = run_fairly(
        {
            "schedules": schedule_work(now, report, horizon_ms),
            "interrupted": interrupted_work(now, report),
            "schedules table": table_work(now),
        },
        budget,
    )
    report.stopped_early = bool(left)
    return report


class FireOutbox:
    """The scan's fires, their runs sent ten to a request. `dispatch` writes one fire's Fire and runs
    (steps (a)-(b) of `dispatch`) and keeps their messages here; `flush` sends every message kept,
    then advances each schedule past its fire (step (c)). So, as in dispatch.dispatch_due, no
    schedule moves past a fire before its runs are sent: a crash before the flush leaves the
    schedules at their fire times, and the next tick dispatches them again (the Fires and runs
    exist; a second message is absorbed by the worker's claim). A schedule whose entry stays on its
    wheel slot is advanced by the walk itself: its mark passes the slot only after the flush, and a
    crash leaves the mark before it."""

    SIZE = 10  # the messages of one SendMessageBatch

    def __init__(
        self,
        now: datetime,
        report: ScheduleScanReport,
        *,
        walked_to: int | None = None,
        write_all: bool = False,
    ) -> None:
        self._now_ms = clock.to_ms(now)
        self._report = report
        # the mark the due walk started from, when it records how far it got: an advance that leaves
        # a wheel slot in place is not written (schedule_data.advance)
        self.walked_to = walked_to
        self._write_all = write_all  # every advance written (Settings.due_walk_advances off)
        self._messages: list[DeliveryMessage] = []
        # schedule id → (its copy, the fire time, the next fire time its advance moves it to)
        self._pending: dict[str, tuple[Schedule, int, int | None]] = {}
        self._advanced: dict[str, Schedule | None] = {}

    def dispatch(self, schedule: Schedule) -> Schedule | None:
        """Steps (a)-(b) for the schedule's next fire: the schedule as its advance will leave it, or
        None when it no longer fires then (paused, deleted, or moved on by another writer). The copy
        is one this tick read strongly consistent (the due walk's batch read) or wrote (a catch-up,
        an advance): step (a) needs no read of its own. A pause that lands after it was read is
        seen by step (b)'s re-read, which cancels the runs."""
        fire_at = schedule.next_fire_at
        if fire_at is None or not schedule.fires_next_at(fire_at):
            return None
        next_ms = schedule.next_after(fire_at)  # before any write: a timing that fails fires nothing
        if dispatch.dispatch_fire(schedule, fire_at, self._now_ms, outbox=self._messages).refused:
            return None
        self._pending[schedule.schedule_id] = (schedule, fire_at, next_ms)
        return replace(schedule, next_fire_at=next_ms)

    def holds(self, schedule_id: str) -> bool:
        """Whether the schedule waits for its advance (flush before dispatching its next fire)."""
        return schedule_id in self._pending

    @property
    def full(self) -> bool:
        return len(self._messages) >= self.SIZE

    def flush(self) -> None:
        """Send the messages kept, then advance each schedule past its fire (a CAS: a writer that
        moved it first wins, and the schedule's dispatch stops there)."""
        messages, self._messages = self._messages, []
        pending, self._pending = self._pending, {}
        if messages:
            dispatch.send_fire_runs(messages)
        for schedule_id, (schedule, fire_at, next_ms) in pending.items():
            try:
                advanced = schedule_data.advance(
                    schedule,
                    fire_at,
                    next_ms,
                    self._now_ms,
                    walked_to=self.walked_to,
                    write_unmoved=self._write_all,
                )
            except Exception:  # one broken schedule must not stop the others
                self._report.item_failures += 1
                owe(schedule, fire_at, self._now_ms, self._report, held_at=fire_at)
                item_failed("schedule", schedule_id)
                advanced = None
            if advanced is not None:
                self._report.fires_dispatched += 1
            self._advanced[schedule_id] = advanced

    def advanced(self, schedule_id: str) -> Schedule | None:
        """The schedule as its advance left it (after a flush), or None when it lost the CAS."""
        return self._advanced.pop(schedule_id, None)


def schedule_work(now: datetime, report: ScheduleScanReport, horizon_ms: int | None = None) -> Work:
    """Due schedules in fire-time order, one short slice of fires at a time: the earliest pending
    fire of any schedule goes first, so with many every-second schedules no schedule waits for
    another's whole look-ahead window. Each is caught up when it is first taken, if it lags. Their
    runs' messages go out ten to a request (FireOutbox)."""
    now_ms = clock.to_ms(now)
    horizon = horizon_ms if horizon_ms is not None else now_ms + get_settings().lookahead_ms
    shards = get_settings().shards
    start = first_shard(now_ms, shards)
    mark = schedule_data.due_mark()
    from_ms = mark.mark if mark.mark is not None else now_ms - due_slots.DAY_MS
    walked_to = mark.mark if mark.backfilled else None
    incoming = heapq.merge(
        *(
            schedule_data.due(str((start + i) % shards), from_ms, horizon, walked_to=walked_to)
            for i in range(shards)
        ),
        key=lambda found: found.order,
    )
    taken: list[tuple[int, int, str, Iterator[Schedule]]] = []  # by the next fire time to dispatch
    # the schedules the walk moves (schedule_data.advance) taken and not done yet, by the earliest
    # time the walk has not finished for them: when the window met a wheel slot, an every-tick
    # schedule's next fire. The next tick must read them again if this one stops before they are done
    met: dict[str, int] = {}
    copies: dict[str, Schedule] = {}  # each schedule taken, as its last step left it
    ticking: set[str] = set()  # the every-tick schedules taken
    seq = 0
    outbox = FireOutbox(now, report, walked_to=walked_to, write_all=not get_settings().due_walk_advances)
    stopped = completed = False
    upcoming: schedule_data.Due | None = None
    try:
        upcoming = next(incoming, None)
        while upcoming is not None or taken:
            if upcoming is not None and (
                not taken or int(upcoming.schedule.next_fire_at or 0) <= taken[0][0]
            ):
                first, upcoming = upcoming, next(incoming, None)
                schedule_id = first.schedule.schedule_id
                if first.met_at is not None:
                    met[schedule_id] = first.met_at
                elif _every_tick(first.schedule):  # on its key, or on an exact one its advance leaves
                    ticking.add(schedule_id)
                    met[schedule_id] = int(first.schedule.next_fire_at or 0)
                copies[schedule_id] = first.schedule
                report.due_schedules += 1
                steps = process_steps(first.schedule, now, horizon, report, outbox)
            else:
                _, _, schedule_id, steps = heapq.heappop(taken)
                if outbox.holds(schedule_id):
                    outbox.flush()  # its next fire goes by the copy its advance returns
            try:
                schedule = next(steps)
            except StopIteration:
                met.pop(schedule_id, None)
                copies.pop(schedule_id, None)
                yield
                continue
            except Exception:  # one broken schedule must not stop the others
                report.item_failures += 1
                failed = copies.pop(schedule_id, None)
                held_at = met.pop(schedule_id, None)
                if failed is None:
                    report.hold(held_at)
                else:
                    owe(failed, failed.next_fire_at, now_ms, report, held_at=held_at)
                item_failed("schedule", schedule_id)
                yield
                continue
            if schedule.next_fire_at is not None and schedule.next_fire_at <= horizon:
                seq += 1
                copies[schedule_id] = schedule
                if schedule_id in ticking:
                    met[schedule_id] = schedule.next_fire_at
                heapq.heappush(taken, (schedule.next_fire_at, seq, schedule_id, steps))
            else:
                met.pop(schedule_id, None)
                copies.pop(schedule_id, None)
            if outbox.full:
                outbox.flush()
            yield
        completed = True
    except GeneratorExit:  # the tick's time ran out
        stopped = True
        raise
    except Exception:  # the walk's own read failed: the mark stays, the next tick reads it all again
        report.item_failures += 1
        item_failed("schedules", "due walk")
    finally:
        try:
            outbox.flush()  # the rest, also when the tick's time ran out: dispatched is sent and advanced
            if mark.backfilled and (stopped or completed):
                # until every schedule has a slot, every tick reads every slot (table_work)
                reached = _reached(upcoming, met, horizon, stopped)
                if reached is not None:
                    _move_mark(report, reached, now_ms)
        finally:
            count(DUE_SCHEDULES, report.due_schedules)


def _every_tick(schedule: Schedule) -> bool:
    """A schedule read at every tick, whose fires the walk passes as it dispatches them. One whose
    expression no longer parses is not: its own step fails, and is recorded, without stopping the walk."""
    if schedule.next_fire_at is None:
        return False
    try:
        return due_slots.wheel_of(schedule.spec()) == due_slots.Wheel.TICK
    except CronError:
        return False


STOP_MARGIN_MS = 60_000  # a tick that stopped early leaves this much more for the next to read again


def _reached(
    upcoming: schedule_data.Due | None, met: dict[str, int], horizon_ms: int, stopped: bool
) -> int | None:
    """How far a tick met every wheel slot and dispatched what it found there: its horizon if it
    finished, else just before the first wheel slot it did not finish (the walk meets them in order)
    or the first fire of an every-tick schedule it did not dispatch, less a margin; None if it
    stopped before the walk reached the wheels (exact and every-tick keys come first)."""
    if not stopped:
        return horizon_ms
    if upcoming is not None and upcoming.met_at is None:
        return None
    left = [upcoming.met_at] if upcoming is not None and upcoming.met_at is not None else []
    return min([*left, *met.values(), horizon_ms + 1]) - 1 - STOP_MARGIN_MS


def owe(
    schedule: Schedule,
    fire_at_ms: int | None,
    now_ms: int,
    report: ScheduleScanReport,
    *,
    held_at: int | None,
) -> None:
    """A schedule failed at its fire at `fire_at_ms` (`held_at`: when the walk met its wheel slot, or
    the every-tick schedule's fire). The walk takes a schedule it passed as done with the fires
    there, so the fire it owes is recorded on it: its entry moves to that exact time, which every tick
    reads, and the mark goes on. If that write fails too, the mark waits before `held_at` until one
    succeeds. An entry that is an exact time already is read by every tick anyway; its failure holds
    the mark as any does (for at most MAX_HOLD_MS)."""
    if held_at is None or fire_at_ms is None or not schedule_data.walk_moves(schedule):
        report.hold(held_at)
        return
    recorded = False
    try:
        recorded = schedule_data.owe(schedule, fire_at_ms, now_ms)
    except Exception:
        logger.warning("a failed schedule's owed fire was not recorded", extra={"fire_at": fire_at_ms})
    if not recorded:
        report.hold(held_at, unrecorded=True)


MAX_HOLD_MS = 10 * 60_000  # a schedule that keeps failing holds the due walk's window no longer


def _move_mark(report: ScheduleScanReport, reached_ms: int, now_ms: int) -> None:
    """Every wheel slot up to `reached_ms` was met and its schedules dispatched: the next tick reads
    from here. A schedule that failed holds the mark before its slot, so the next tick meets it again;
    after MAX_HOLD_MS it no longer does (it recorded the fire it owes: every tick reads it there),
    unless that record failed too."""
    to_ms = reached_ms
    if report.held_from is not None:
        held = report.held_from - 1
        if held < now_ms - MAX_HOLD_MS and not report.owed_unrecorded:
            logger.warning(
                "a failing schedule no longer holds the due walk", extra={"fire_at": report.held_from}
            )
            held = now_ms - MAX_HOLD_MS
        to_ms = min(to_ms, held)
    schedule_data.move_due_mark(to_ms)


SLICE_MS = 1_000  # fire times dispatched per step of one schedule (one for an every-second one)


def process(
    schedule: Schedule,
    now: datetime,
    horizon_ms: int,
    report: ScheduleScanReport,
    *,
    walked_to: int | None = None,
) -> Schedule:
    """Catch up if the schedule lags, then dispatch its fires due up to the horizon; returns the
    schedule as the last step left it. `walked_to`: as the scan's due walk does it from that mark
    (its outbox, and advances it leaves to the walk's mark)."""
    outbox = FireOutbox(now, report, walked_to=walked_to) if walked_to is not None else None
    current = schedule
    for current in process_steps(schedule, now, horizon_ms, report, outbox):  # noqa: B007 (the last one is kept)
        if outbox is not None:
            outbox.flush()  # the step's runs sent and the schedule advanced before its next step
    return current


def process_steps(
    schedule: Schedule,
    now: datetime,
    horizon_ms: int,
    report: ScheduleScanReport,
    outbox: FireOutbox | None = None,
) -> Iterator[Schedule]:
    """The steps of `process`, one slice of fire times each; each yields the schedule as it stands
    after the step (the scan orders the schedules it holds by the next fire time of that copy).
    With an `outbox`, a step dispatches one fire into it and yields the schedule as its advance will
    leave it; the caller flushes the outbox before taking the next step."""
    if schedule.next_fire_at is None or not schedule.is_active:
        return
    cutoff = now - GRACE
    if schedule.next_fire_at < clock.to_ms(cutoff):
        plan = plan_catch_up(
            schedule.spec(),
            clock.from_ms(schedule.at) if schedule.cron is None and schedule.at is not None else None,
            clock.from_ms(schedule.next_fire_at),
            _catch_up_until(schedule, cutoff),
            policy_of(schedule.missed_policy),
        )
        if plan is not None:
            moved = apply_catch_up(
                schedule, plan, now, walked_to=outbox.walked_to if outbox is not None else None
            )
            if moved is None:
                return  # someone else moved the schedule first; they own this pass
            schedule = moved
            report.catch_ups += 1
            report.missed_recorded += len(plan.missed)
            report.missed_left_out += plan.left_out
    if outbox is not None:
        yield from _outbox_steps(schedule, horizon_ms, outbox)
        return
    while schedule.next_fire_at is not None and schedule.next_fire_at <= horizon_ms:
        done = dispatch.dispatch_due(schedule, now, min(horizon_ms, schedule.next_fire_at + SLICE_MS))
        report.fires_dispatched += done.handled
        if done.handled == 0:
            return  # another writer moved the schedule
        schedule = done.schedule
        yield schedule


def _outbox_steps(schedule: Schedule, horizon_ms: int, outbox: FireOutbox) -> Iterator[Schedule]:
    """One fire per step through the outbox: the first from the copy the due walk read (or the
    catch-up wrote), each next one from the copy the previous advance returned."""
    while schedule.next_fire_at is not None and schedule.next_fire_at <= horizon_ms:
        moving_to = outbox.dispatch(schedule)
        if moving_to is None:
            return  # paused, deleted, or moved on by another writer: the next scan reads it again
        yield moving_to
        advanced = outbox.advanced(schedule.schedule_id)
        if advanced is None:
            return  # another writer moved it first
        schedule = advanced


def record_owed(schedule: Schedule, now: datetime) -> Schedule | None:
    """A schedule about to be paused that lags (fire times passed while it was ACTIVE that no scan
    dispatched): record them MISSED, whatever its missed-fire policy, since a paused schedule runs
    nothing, and move it past now. The schedule as moved; itself when it does not lag; None when
    another writer moved it first."""
    cutoff = now - GRACE
    if (
        not schedule.is_active
        or schedule.next_fire_at is None
        or schedule.next_fire_at >= clock.to_ms(cutoff)
    ):
        return schedule
    spec = schedule.spec()
    owed = clock.from_ms(schedule.next_fire_at)
    plan = plan_catch_up(
        spec,
        clock.from_ms(schedule.at) if schedule.cron is None and schedule.at is not None else None,
        owed,
        _catch_up_until(schedule, cutoff),
        MissedPolicy.SKIP,
    )
    if plan is None and spec is not None and owed < _catch_up_until(schedule, cutoff):
        # only its stored next fire time is owed (a scan would dispatch it late): recorded MISSED too
        plan = CatchUpPlan(
            dispatch=None, missed=[owed], left_out=0, next_fire=cron_rules.next_fire(spec, owed)
        )
    return schedule if plan is None else apply_catch_up(schedule, plan, now)


def _catch_up_until(schedule: Schedule, cutoff: datetime) -> datetime:
    """A catch-up looks no further than the schedule's end_at: no missed or run fire after it."""
    if schedule.cron is not None and schedule.end_at is not None:
        return min(cutoff, clock.from_ms(int(schedule.end_at) + 1))
    return cutoff


def apply_catch_up(
    schedule: Schedule, plan: CatchUpPlan, now: datetime, *, walked_to: int | None = None
) -> Schedule | None:
    """Record the MISSED Fires (existing rows are never overwritten), then move the schedule with a
    CAS: to the one fire to run (RUN_ONCE, dispatched right after by the normal path) or past now.
    Returns the schedule as moved, or None when another writer moved it first. `walked_to`: in the
    scan's due walk from that mark, which dispatches that fire next."""
    now_ms = clock.to_ms(now)
    assert schedule.next_fire_at is not None  # a schedule lags only behind a fire time it has
    expected = schedule.next_fire_at
    for missed_at in plan.missed:
        fire_data.create(
            schedule.schedule_id,
            clock.to_ms(missed_at),
            schedule.app_id,
            [],
            [],
            now_ms,
            status=FireStatus.MISSED,
            error="missed: not dispatched in time (outage or deploy gap)",
        )
    if plan.dispatch is None or clock.to_ms(plan.dispatch) != expected:
        _miss_died_dispatch(schedule.schedule_id, expected, now_ms)
    target = schedule.within_window(clock.to_ms(plan.moves_to) if plan.moves_to is not None else None)
    moved = schedule_data.catch_up_move(
        schedule,
        expected,
        target,
        plan.left_out,
        now_ms,
        finish=plan.finishes(one_time=schedule.cron is None),
        walked_to=walked_to,
    )
    if moved is not None:
        count(MISSED_FIRES, plan.missed_total)
        operational_events.fires_missed(
            schedule.app_id,
            schedule.schedule_id,
            [clock.to_ms(m) for m in plan.missed],
            plan.missed_total,
            str(schedule.missed_policy),
            now_ms,
        )
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


def _miss_died_dispatch(schedule_id: str, fire_at_ms: int, now_ms: int) -> None:
    """A Fire at the schedule's stored next fire time that is still open was left by a dispatch that
    died before moving the schedule on (a dispatcher writes a Fire only at that time, and moves past
    it only once its runs are sent). The catch-up moves past it, so nothing would dispatch it again:
    its runs never created are written cancelled (a slow dispatch can no longer create them), and the
    Fire is recorded MISSED unless one of its runs started (it then settles from its runs)."""
    fire = fire_data.get(schedule_id, fire_at_ms)
    if fire is None or fire.paged or not fire.is_open:
        return  # a broadcast Fire's fan-out is resumed from the open-fires index
    fire = settle.ending_outside_its_worker(fire)
    for endpoint_id, run_id in fire_data.runs_of(fire):
        billing.put_cancelled(fire, endpoint_id, run_id, now_ms, MISSED_REASON)
    miss(fire, run_data.get_many(fire.app_id, fire_data.run_ids_of(fire)), now_ms)


BACKFILL_PAGE = 200  # schedules read per step of the slot backfill


def table_work(now: datetime) -> Work:
    """The scan's walks of the whole schedules table, a page per step, each going on from where the
    last tick stopped; one read of the due mark says which is left (usually none)."""
    mark = schedule_data.due_mark()
    if not mark.backfilled:
        yield from _slot_backfill(now, mark)
    elif get_settings().due_walk_advances:
        if mark.timing_stored or mark.timing_from is not None:
            schedule_data.forget_timing_stored()  # stored times lag again: a later store starts over
    elif not mark.timing_stored and mark.mark is not None:
        yield from _timing_store(now, mark.mark, mark.timing_from)


def _slot_backfill(now: datetime, mark: schedule_data.DueMark) -> Work:
    """Give a due slot to every schedule an earlier release put in the due index without one. Until
    the whole table was read the scan keeps no mark, so each tick reads every slot and finds a
    schedule however late it got its slot."""
    start = mark.backfill_from
    given = 0
    while True:
        done, start = schedule_data.backfill_slots(clock.to_ms(now), start, BACKFILL_PAGE)
        given += done
        schedule_data.save_backfill(start, clock.to_ms(now))
        if start is None:
            logger.info("every schedule in the due index has a due slot", extra={"given_this_tick": given})
            return
        yield


TIMING_PAGE = 200  # schedules read per step of the store of walked timing


def _timing_store(now: datetime, walked_to: int, start: dict[str, Any] | None) -> Work:
    """While the due walk does not advance schedules (Settings.due_walk_advances off, before a
    rollback to a release that reads only the stored next fire time), store the next fire of every
    schedule it advanced, until the whole table was read; the scan writes every advance meanwhile,
    so none lags again."""
    stored = 0
    while True:
        done, start = schedule_data.store_walked_timing(walked_to, start, TIMING_PAGE)
        stored += done
        schedule_data.save_timing_progress(start, clock.to_ms(now))
        if start is None:
            logger.info(
                "every schedule's next fire time is stored: a release that reads only that may be deployed",
                extra={"stored_this_tick": stored},
            )
            return
        yield


def redispatch_interrupted(now: datetime, report: ScheduleScanReport) -> None:
    for _ in interrupted_work(now, report):
        pass


UNSETTLED_AFTER_MS = 10 * 60_000  # a dispatched Fire open this long past its time is looked at again


def interrupted_work(now: datetime, report: ScheduleScanReport) -> Work:
    """Broadcast Fires whose fan-out stalled (a crash before a page was handed on) are fanned out
    again from their first page not yet continued, and listed Fires a release that marked them
    dispatched after the send left unmarked are dispatched again; a Fire whose schedule is gone or
    paused is cancelled instead. A dispatched Fire still open UNSETTLED_AFTER_MS past its time is
    settled from its runs if every one of them is final: a count of its runs' ends (a broadcast
    Fire's) or its settle write that a fault lost would otherwise leave it open for ever (the read
    stops at its first run still open). One step per Fire. (A listed Fire whose dispatch dies now is
    re-driven from its schedule's `due` entry.)"""
    now_ms = clock.to_ms(now)
    shards = get_settings().shards
    for i in range(shards):
        shard = (first_shard(now_ms, shards) + i) % shards
        for fire in fire_data.open_before(str(shard), now_ms - dispatch.INTERRUPTED_AFTER_MS):
            try:
                if fire.started_at is None:
                    redispatch(fire, now_ms, report)
                elif fire.fire_at < now_ms - UNSETTLED_AFTER_MS and _settle_left_open(fire, now_ms):
                    report.fires_settled_late += 1
            except Exception:
                report.item_failures += 1
                item_failed("fire", f"{fire.schedule_id}@{fire.fire_at}")
            yield


STOPPED_REASON = "schedule deleted or paused"


def _settle_left_open(fire: Fire, now_ms: int) -> bool:
    """Settle a dispatched Fire left open past its time from its runs, if every one is final. A
    listed Fire whose runs were all cancelled as missed is recorded MISSED: the check that ended
    them died before it recorded the Fire."""
    if fire.paged:  # its runs are read page by page, up to the first one still open
        return settle.settle_if_done(fire, now_ms) is not None
    runs = run_data.get_many(fire.app_id, fire_data.run_ids_of(fire))
    if len(runs) < len(fire.run_ids) or any(r.status not in st.TERMINAL for r in runs):
        return False  # still under way (a retry, a long wait)
    if all(r.status == RunStatus.CANCELLED and r.last_error == MISSED_REASON for r in runs):
        return miss(fire, runs, now_ms)
    known = {r.run_id: str(r.status) for r in runs}
    errors = {r.run_id: r.last_error for r in runs if r.last_error}
    return settle.settle_if_done(fire, now_ms, known=known, errors=errors) is not None


def redispatch(fire: Fire, now_ms: int, report: ScheduleScanReport) -> None:
    """Dispatch again a Fire whose dispatch was interrupted; cancel it if its schedule is gone, is
    not ACTIVE, or was paused at the Fire's time."""
    schedule = schedule_data.get_timed(fire.app_id, fire.schedule_id, consistent=True)
    if schedule is None or not schedule.is_active or schedule.paused_at(fire.fire_at):
        settle.cancel_fire(fire, now_ms, STOPPED_REASON)
        return
    dispatch.dispatch_fire(schedule, fire.fire_at, now_ms)
    if not fire.paged and fire.started_at is None and fire.overlap is None:
        fire_data.mark_dispatched(fire, now_ms)
    settle.settle_if_done(fire, now_ms)
    report.fires_redispatched += 1


def is_late_first_delivery(run: TaskRun, now_ms: int) -> bool:
    """A schedule run never attempted whose due time has passed, found by the reconcile because its
    message was lost (an outage, a purged queue): it follows the missed-fire policy, not a late run.
    Its due time is its fire time, or later with jitter (or for a Fire that waited for its turn)."""
    return (
        run.source == Source.SCHEDULE
        and run.status == RunStatus.PENDING
        and int(run.total_attempts) == 0
        and not run.flow_held  # flow control holds it back: late by design, never lost
        and run.fire_at is not None
        and max(int(run.fire_at), int(run.deliver_at or 0)) < now_ms - int(GRACE.total_seconds() * 1000)
    )


@dataclass
class LateReport:
    backlogged: int = 0
    missed: int = 0
    resent: int = 0


def reconcile_late(
    late: list[TaskRun],
    now: datetime,
    *,
    queues_lost: bool = False,
    state: queue_data.Backlog | None = None,
) -> tuple[list[TaskRun], LateReport]:
    """Schedule runs no worker ever took, found after their message should have been consumed. While
    the queues hold a backlog the message may still be among it: look again later (with a growing
    interval), it will be delivered late. Once the queues hold none, or the message is older than the
    queue keeps messages, or the queues were rebuilt (`queues_lost`), the message was lost: the
    missed-fire policy decides (settle_late_fires). `state` is the queues' backlog as the caller saw
    it before sending anything this tick (read here if not given). Returns the runs to send again."""
    report = LateReport()
    if not late:
        return [], report
    now_ms = clock.to_ms(now)
    if state is None and not queues_lost:
        state = queue_data.backlog()
    if not queues_lost:
        redispatch_ms = get_settings().redispatch_after_ms
        lost: list[TaskRun] = []
        waiting = state.waiting if state is not None else None
        retention_ms = state.retention_ms if state is not None else None
        for run in late:
            wake_at = late_run_wake(run.last_sent_ms, now_ms, waiting, retention_ms, redispatch_ms)
            if wake_at is None:
                lost.append(run)
            elif run_data.wake_later(run, wake_at):
                report.backlogged += 1
        if report.backlogged:
            logger.info("schedule runs wait behind a queue backlog", extra={"count": report.backlogged})
        late = lost
    resend = settle_late_fires(late, now, report)
    report.resent = len(resend)
    return resend, report


def _unstarted(run: TaskRun) -> bool:
    return run.status == RunStatus.PENDING and int(run.total_attempts) == 0


def settle_late_fires(late: list[TaskRun], now: datetime, report: LateReport | None = None) -> list[TaskRun]:
    """Runs whose message was lost before any run of their Fire started: the Fire's fate follows the
    missed-fire policy (domain.catchup.plan_late_fires); a Fire with a started run happened, so its
    lost runs are delivered late; a paused or deleted schedule's are cancelled. Every cancel is
    conditional on the run still never having been taken: if a worker took one meanwhile, the Fire
    settles from its runs' outcomes (never MISSED with a delivered run). Returns the runs to send."""
    report = report if report is not None else LateReport()
    now_ms = clock.to_ms(now)
    cutoff = now - GRACE
    lost_ids = {run.run_id for run in late}
    by_schedule: dict[tuple[str, str], set[int]] = defaultdict(set)
    for run in late:
        by_schedule[(run.app_id, str(run.source_id))].add(int(run.fire_at))  # type: ignore[arg-type]
    resend: list[TaskRun] = []
    for (app_id, schedule_id), fire_times in by_schedule.items():
        try:
            schedule = schedule_data.get_timed(app_id, schedule_id, consistent=True)
            fires_at = {t: fire_data.get(schedule_id, t) for t in sorted(fire_times)}
            _cancel_orphans(schedule_id, fires_at, late, now_ms)
            runs_at = {
                t: run_data.get_many(app_id, fire_data.run_ids_of(fire))
                if fire is not None
                else [r for r in late if r.source_id == schedule_id and r.fire_at == t]
                for t, fire in fires_at.items()
            }
            stopped = {
                t
                for t, fire in fires_at.items()
                if schedule is None or not schedule.is_active or schedule.paused_at(t)
            }
            for t in sorted(stopped):
                fire, ended = fires_at[t], 0
                if fire is not None:
                    fire = settle.ending_outside_its_worker(fire)
                for run in runs_at[t]:
                    if run.run_id in lost_ids and _unstarted(run):
                        ended += run_data.cancel_unstarted(run, now_ms, STOPPED_REASON) is not None
                if fire is not None:
                    settle.counted_runs_ended(fire, ended)
                    settle.settle_if_done(fire, now_ms)
            if schedule is None or not schedule.is_active:
                continue
            started, unstarted = split_started(
                {
                    t: [(r.status, int(r.total_attempts)) for r in runs]
                    for t, runs in runs_at.items()
                    if t not in stopped
                }
            )
            plan = plan_late_fires(
                schedule.spec(),
                unstarted,
                cutoff,
                policy_of(schedule.missed_policy),
                later_fire_ran=bool(unstarted) and fire_data.any_after(schedule_id, unstarted[-1], now_ms),
            )
            for t in sorted(started) + plan.run_late:
                resend.extend(r for r in runs_at[t] if r.run_id in lost_ids and _unstarted(r))
            for t in plan.missed:
                if miss(fires_at[t], runs_at[t], now_ms, policy=str(schedule.missed_policy)):
                    report.missed += 1
        except Exception:
            item_failed("late fires", schedule_id)
    return resend


ORPHAN_REASON = "its fire settled without it (the fan-out that made it died before recording it)"


def _cancel_orphans(
    schedule_id: str, fires_at: dict[int, Fire | None], late: list[TaskRun], now_ms: int
) -> None:
    """Late runs of a settled Fire that the Fire does not list: a broadcast page's fan-out wrote them
    and died before it recorded them, and the Fire settled without them (a pause cancelled it, a
    catch-up recorded it MISSED). Nothing else will ever send or end them: they are cancelled, never
    delivered, and the Fire stays as it settled."""
    for t, fire in fires_at.items():
        if fire is None or fire.is_open:
            continue
        listed = set(fire_data.run_ids_of(fire))
        for run in late:
            if (
                run.source_id == schedule_id
                and run.fire_at == t
                and run.run_id not in listed
                and _unstarted(run)
            ):
                run_data.cancel_unstarted(run, now_ms, ORPHAN_REASON)


MISSED_REASON = "missed: the fire's delivery could not start in time (outage or lost message)"


def miss(fire: Fire | None, runs: list[TaskRun], now_ms: int, *, policy: str | None = None) -> bool:
    """Cancel every run of a Fire none of whose runs started and record it MISSED; True if it was.
    A run a worker took meanwhile keeps the Fire open: it settles from its runs' outcomes."""
    cancelled_all = fire is not None and len(runs) == len(fire_data.run_ids_of(fire))
    if fire is not None:
        fire = settle.ending_outside_its_worker(fire)
    ended = 0
    for run in runs:
        if run.status == RunStatus.CANCELLED:
            continue
        if _unstarted(run) and run_data.cancel_unstarted(run, now_ms, MISSED_REASON):
            ended += 1
        else:
            cancelled_all = False
    if fire is None:
        return False
    if not cancelled_all:
        settle.counted_runs_ended(fire, ended)
        settle.settle_if_done(fire, now_ms)
        return False
    if not settle.settle_as(fire, FireStatus.MISSED, now_ms, MISSED_REASON):
        return False
    count(MISSED_FIRES)
    operational_events.fires_missed(fire.app_id, fire.schedule_id, [fire.fire_at], 1, policy, now_ms)
    return True
