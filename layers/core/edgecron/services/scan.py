"""The scan (every minute): dispatch what is due within the look-ahead window so SQS DelaySeconds
lands it on the second, and heal what a crash or a lost message left behind. Everything is driven
from DynamoDB, so losing every queued message loses no run. A tick works within the Lambda's
remaining time, sharing it fairly between schedules, due runs and retries, and interrupted Fires."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from edgecron import clock, ids
from edgecron.config import Settings, get_settings
from edgecron.data import queues as queue_data
from edgecron.data import run_checks
from edgecron.data import runs as run_data
from edgecron.data.queues import DeliveryMessage, send_deliveries
from edgecron.data.run_checks import check_lag_ms
from edgecron.domain import run_states as st
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import RunStatus
from edgecron.domain.wake import wake_time
from edgecron.errors import StoredItemUnreadable
from edgecron.observability import SCAN_DURATION_MS, logger, millis
from edgecron.services import events, usage
from edgecron.services.delivery import record_lost_attempt
from edgecron.services.fires import due_walk
from edgecron.services.scan_work import (
    DEFAULT_BUDGET_MS,
    Budget,
    Work,
    first_shard,
    item_failed,
    run_fairly,
)

CHECK_BATCH = 100  # runs read per query of the check of recent runs
FIRST_CHECK_SEC = 3_600  # an App without a check mark (new, or an upgraded stack): look back this far


@dataclass
class ScanReport:
    runs_checked: int = 0
    runs_watched: int = 0
    runs_enqueued: int = 0
    claims_released: int = 0
    stale_index_entries: int = 0
    late_backlogged: int = 0
    late_missed: int = 0
    item_failures: int = 0
    unfinished: list[str] = field(default_factory=list)
    extra: dict[str, int] = field(default_factory=dict)
    duration_ms: int = 0


def run_scan(
    now: datetime, *, rebuild: bool = False, remaining_ms: Callable[[], float] | None = None
) -> ScanReport:
    """One scan tick. `remaining_ms` is the Lambda context's remaining time (a default budget
    without one). `rebuild` re-enqueues every waiting run due within the window even if it was
    enqueued before (the local stack does that after restoring a snapshot without queue contents;
    an operator after purging a queue): their messages are known to be lost."""
    started = time.perf_counter()
    budget = Budget(remaining_ms) if remaining_ms is not None else Budget.of(DEFAULT_BUDGET_MS)
    report = ScanReport()
    schedules = due_walk.ScheduleScanReport()
    report.unfinished = run_fairly(
        {
            "runs": run_work(now, report, rebuild=rebuild),
            "schedules": due_walk.schedule_work(now, schedules),
            "interrupted": due_walk.interrupted_work(now, schedules),
            "schedules table": due_walk.table_work(now),
            "event fan-outs": events.left_behind_work(clock.to_ms(now), get_settings().shards, report.extra),
        },
        budget,
    )
    schedules.stopped_early = bool(report.unfinished)
    report.item_failures += schedules.item_failures
    report.extra.update(schedules.__dict__)
    report.duration_ms = int((time.perf_counter() - started) * 1000)
    millis(SCAN_DURATION_MS, report.duration_ms)
    if report.unfinished:
        logger.warning("scan stopped at its deadline", extra={"unfinished": report.unfinished})
    logger.info("scan finished", extra={"report": report.__dict__})
    return report


def dispatch_runs(now: datetime, report: ScanReport, *, rebuild: bool = False) -> None:
    """All of the run side of a tick (the deploy compensation runs it after the schedules)."""
    for _ in run_work(now, report, rebuild=rebuild):
        pass


def check_runs(now: datetime, report: ScanReport) -> None:
    """Only the check of recent runs, as one tick would make it (the cost benchmark prices it)."""
    settings = get_settings()
    now_ms = clock.to_ms(now)
    outbox: list[DeliveryMessage] = []
    tick = _Tick(now_ms, now_ms + settings.lookahead_sec * 1000, settings, report, outbox, [], False)
    try:
        for _ in check_recent_runs(tick):
            pass
    finally:
        flush(outbox, report)


def run_work(now: datetime, report: ScanReport, *, rebuild: bool = False) -> Work:
    """Check the runs sent at their creation that are old enough (check_recent_runs), then walk the
    wake index, one step per run: enqueue due waiting runs, release expired claims (a worker died and
    its message is gone), drop stale entries; then reconcile the schedule runs no worker ever took
    (due_walk.reconcile_late). Messages are sent in batches as they come."""
    settings = get_settings()
    now_ms = clock.to_ms(now)
    horizon = now_ms + settings.lookahead_sec * 1000
    outbox: list[DeliveryMessage] = []
    late: list[TaskRun] = []
    backlog = None if rebuild else queue_data.backlog()  # before this tick sends anything
    try:
        tick = _Tick(now_ms, horizon, settings, report, outbox, late, rebuild)
        try:
            yield from check_recent_runs(tick)
        except Exception:  # the Apps could not be listed: the wake walk still runs
            report.item_failures += 1
            item_failed("recent runs", "*")
        for i in range(settings.shards):
            shard = (first_shard(now_ms, settings.shards) + i) % settings.shards
            for run in run_data.wake_due(str(shard), None if rebuild else horizon, tick.unreadable):
                if run.run_id in tick.handled:
                    continue  # its entry is the one the check just gave it
                try:
                    wake_one(run, now_ms, horizon, settings, report, outbox, late)
                except Exception:
                    report.item_failures += 1
                    item_failed("run", run.run_id)
                if len(outbox) >= 10:
                    flush(outbox, report)
                yield
        resend, late_report = due_walk.reconcile_late(late, now, queues_lost=rebuild, state=backlog)
        report.late_backlogged += late_report.backlogged
        report.late_missed += late_report.missed
        wake = wake_time(now_ms, sent=True, redispatch_after_ms=settings.redispatch_after_ms)
        for run in resend:
            if run_data.mark_enqueued(run, wake, now_ms):
                outbox.append(DeliveryMessage(run.run_id, run.app_id))
        yield
    finally:
        flush(outbox, report)


@dataclass
class _Tick:
    """What every step of a tick's run side shares."""

    now_ms: int
    horizon: int
    settings: Settings
    report: ScanReport
    outbox: list[DeliveryMessage]
    late: list[TaskRun]
    rebuild: bool
    handled: set[str] = field(default_factory=set)  # runs the check handled: the wake walk skips them

    def unreadable(self, error: StoredItemUnreadable) -> None:
        """A stored run that cannot be read is one bad item: counted, and the walk goes on."""
        self.report.item_failures += 1
        item_failed("run", error.item_id)


def check_recent_runs(tick: _Tick) -> Work:
    """Runs sent at their creation (direct runs due within the look-ahead, Event runs) have no `wake`
    entry. Per App, read the runs created since the App's check mark and at least check_lag_ms ago
    (the queries of the App's partitions, eventually consistent), give each one still unfinished the
    entry it would have had, and handle it as the wake walk would; then move the mark. Reads grow
    with the Apps (one batch read of marks per 100, one query per partition of an App whose runs
    may reach past its mark: data/run_checks.py) and the runs created since the last tick, not with
    an App's history. `rebuild` (every message is known lost) reads up to the horizon, since the
    runs of fires dispatched ahead have ids ordered by their fire times, and leaves the marks alone."""
    until = tick.horizon if tick.rebuild else tick.now_ms - check_lag_ms(tick.settings)
    for apps in run_checks.app_pages():
        marks = run_checks.marks([app_id for app_id, _ in apps])
        for app_id, created_at in apps:
            try:
                yield from _check_app(tick, app_id, created_at, marks.get(app_id), until)
            except Exception:  # one App's reads failed: its mark stays, the next tick tries again
                tick.report.item_failures += 1
                item_failed("app", app_id)


def _check_app(
    tick: _Tick, app_id: str, created_at: int, check: run_checks.CheckMark | None, until: int
) -> Work:
    mark = None if check is None else check.checked_key
    after = _resume_from(mark) or run_data.time_floor(max(created_at - 1, until - FIRST_CHECK_SEC * 1000))
    if check is not None and check.created_until is not None and check.created_until < ids.floor_ms(after):
        return  # every run of the App sent at creation is at or before its mark: nothing to read
    moved = False
    seen = check
    while (read := run_data.created_between(app_id, after, until, CHECK_BATCH, tick.unreadable)).last_id:
        batch = read.runs
        handled = 0
        for run in batch:
            try:
                check_one(run, tick)
            except Exception:
                tick.report.item_failures += 1
                item_failed("run", run.run_id)
                break  # the mark stops before this run: the next tick checks it again
            handled += 1
            if len(tick.outbox) >= 10:
                flush(tick.outbox, tick.report)
            yield
        stopped = handled < len(batch)
        batch = batch[:handled]
        tick.report.runs_checked += len(batch)
        if stopped and not batch:
            return  # nothing handled: the mark stays where it is
        after = batch[-1].run_id if stopped else read.last_id
        if not tick.rebuild:  # counted with the mark's move past them (a rebuild counts nothing)
            seen = run_checks.mark_checked(app_id, after, usage.checked_counts(batch), seen)
            if seen is None:
                return  # another tick moved the mark past these runs first: they are its to count
            moved = True
        if stopped:
            return  # the App's later runs wait for the next tick, which starts at the failed one
        if not read.full:
            break
    if tick.rebuild:
        yield
        return
    cover = None if check is None else check.created_until
    if cover is not None and cover < until and run_data.time_floor(cover + 1) > after:
        # every run its cover allows is checked: the mark goes past the cover, once, and the App
        # costs no query until a new run moves its cover
        run_checks.set_checked_key(app_id, run_data.time_floor(cover + 1))
    elif mark is None and not moved:
        run_checks.set_checked_key(app_id, after)  # once per App: later ticks start from here
    yield


def _resume_from(mark: str | None) -> str | None:
    """Where the check of an App goes on: its mark, a run id; a mark an earlier release left (a
    `<ms>#<run id>` key) is read as the time it names."""
    if mark and mark[:1].isdigit():
        return run_data.time_floor(int(mark.partition("#")[0]))
    return mark


def check_one(run: TaskRun, tick: _Tick) -> None:
    """A recent run without a `wake` entry that is not finished: its message was lost, is late, or its
    worker may have died. A waiting run whose wake time (due + REDISPATCH_AFTER_SEC) has come is sent
    again and looked at again REDISPATCH_AFTER_SEC later; any other gets the entry it would have had."""
    if run.has_wake_entry or run.status in st.TERMINAL:
        return  # the wake index looks after it, or nothing is left to do
    redispatch_ms = tick.settings.redispatch_after_ms
    wake = wake_time(int(run.deliver_at), sent=True, redispatch_after_ms=redispatch_ms)
    woken = tick.rebuild or wake <= tick.horizon
    late_fire = due_walk.is_late_first_delivery(run, tick.now_ms)  # the missed-fire policy decides
    if run.status in st.WAITING and woken and run.deliver_at <= tick.horizon and not late_fire:
        if run_data.watch(
            run, wake_time(tick.now_ms, sent=True, redispatch_after_ms=redispatch_ms), enqueued_at=tick.now_ms
        ):
            tick.report.runs_watched += 1
            tick.handled.add(run.run_id)
            tick.outbox.append(DeliveryMessage(run.run_id, run.app_id, due_ms=int(run.deliver_at)))
        return
    watched = run_data.watch(run, wake)
    if watched is None:
        return  # it finished or moved on since it was read
    tick.report.runs_watched += 1
    tick.handled.add(run.run_id)
    if woken:
        wake_one(watched, tick.now_ms, tick.horizon, tick.settings, tick.report, tick.outbox, tick.late)


def wake_one(
    run: TaskRun,
    now_ms: int,
    horizon: int,
    settings: Settings,
    report: ScanReport,
    outbox: list[DeliveryMessage],
    late: list[TaskRun],
) -> None:
    if run.status in st.TERMINAL:
        report.stale_index_entries += run_data.drop_from_wake_index(run) is not None
    elif run.status == RunStatus.RUNNING:
        expires = run.claim_expires_at
        if expires is not None and expires < now_ms:
            wake = wake_time(now_ms, sent=True, redispatch_after_ms=settings.redispatch_after_ms)
            # the dead worker's HTTP call is in the history before its claim is released: once
            # released, nothing tells the next worker that a call was made (a write-once put, so a
            # tick that dies in between and the next one record it once)
            record_lost_attempt(run, int(run.total_attempts), int(run.attempt_count), now_ms)
            if run_data.release_expired_claim(run, now_ms, wake):
                report.claims_released += 1
                outbox.append(DeliveryMessage(run.run_id, run.app_id))
        elif expires is not None and expires > horizon:
            # claims leave wake_at alone; one that outlives this window is looked at again
            # when it expires (within the window, the next scan sees the run anyway)
            run_data.wake_at_claim_expiry(run)
    elif due_walk.is_late_first_delivery(run, now_ms):
        late.append(run)  # its message should have been consumed by now: a backlog, or lost
    elif run.deliver_at <= horizon:
        wake = wake_time(int(run.deliver_at), sent=True, redispatch_after_ms=settings.redispatch_after_ms)
        if run_data.mark_enqueued(run, wake, now_ms):
            outbox.append(DeliveryMessage(run.run_id, run.app_id, due_ms=int(run.deliver_at)))


def flush(outbox: list[DeliveryMessage], report: ScanReport) -> None:
    if not outbox:
        return
    messages = list(outbox)
    outbox.clear()
    failed = set(send_deliveries(messages, retry=True))
    report.runs_enqueued += len(messages) - len(failed)
    if failed:
        logger.warning(
            "some runs could not be enqueued; they are redispatched after REDISPATCH_AFTER_SEC",
            extra={"count": len(failed)},
        )
