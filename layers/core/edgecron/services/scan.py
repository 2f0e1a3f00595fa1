"""The scan (every minute): dispatch what is due within the look-ahead window so SQS DelaySeconds
lands it on the second, and heal what a crash or a lost message left behind. Everything is driven
from DynamoDB, so losing every queued message loses no run. A tick works within the Lambda's
remaining time, sharing it fairly between schedules, due runs and retries, and interrupted Fires."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from edgecron import clock
from edgecron.config import Settings, get_settings
from edgecron.data import queues as queue_data
from edgecron.data import runs as run_data
from edgecron.data.models import TaskRunModel
from edgecron.data.queues import DeliveryMessage, send_deliveries
from edgecron.domain import run_states as st
from edgecron.observability import SCAN_DURATION_MS, logger, millis
from edgecron.services import fire_pipeline
from edgecron.services.delivery import record_lost_attempt
from edgecron.services.scan_work import (
    DEFAULT_BUDGET_MS,
    Budget,
    Work,
    first_shard,
    item_failed,
    run_fairly,
)


@dataclass
class ScanReport:
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
    schedules = fire_pipeline.ScheduleScanReport()
    report.unfinished = run_fairly(
        {
            "runs": run_work(now, report, rebuild=rebuild),
            "schedules": fire_pipeline.schedule_work(now, schedules),
            "interrupted": fire_pipeline.interrupted_work(now, schedules),
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


def run_work(now: datetime, report: ScanReport, *, rebuild: bool = False) -> Work:
    """Walk the wake index, one step per run: enqueue due waiting runs, release expired claims (a
    worker died and its message is gone), drop stale entries; then reconcile the schedule runs no
    worker ever took (fire_pipeline.reconcile_late). Messages are sent in batches as they come."""
    settings = get_settings()
    now_ms = clock.to_ms(now)
    horizon = now_ms + settings.lookahead_sec * 1000
    outbox: list[DeliveryMessage] = []
    late: list[TaskRunModel] = []
    backlog = None if rebuild else queue_data.backlog()  # before this tick sends anything
    try:
        for i in range(settings.shards):
            shard = (first_shard(now_ms, settings.shards) + i) % settings.shards
            for run in run_data.wake_due(str(shard), None if rebuild else horizon):
                try:
                    wake_one(run, now_ms, horizon, settings, report, outbox, late)
                except Exception:
                    report.item_failures += 1
                    item_failed("run", run.run_id)
                if len(outbox) >= 10:
                    flush(outbox, report)
                yield
        resend, late_report = fire_pipeline.reconcile_late(late, now, queues_lost=rebuild, state=backlog)
        report.late_backlogged += late_report.backlogged
        report.late_missed += late_report.missed
        wake = now_ms + settings.redispatch_after_sec * 1000
        for run in resend:
            if run_data.mark_enqueued(run, wake, now_ms):
                outbox.append(DeliveryMessage(run.run_id, run.app_id))
        yield
    finally:
        flush(outbox, report)


def wake_one(
    run: TaskRunModel,
    now_ms: int,
    horizon: int,
    settings: Settings,
    report: ScanReport,
    outbox: list[DeliveryMessage],
    late: list[TaskRunModel],
) -> None:
    if run.status in st.TERMINAL:
        report.stale_index_entries += run_data.drop_from_wake_index(run)
    elif run.status == st.RUNNING:
        expires = run.claim_expires_at
        if expires is not None and expires < now_ms:
            wake = now_ms + settings.redispatch_after_sec * 1000
            if run_data.release_expired_claim(run, now_ms, wake):
                report.claims_released += 1
                record_lost_attempt(run, int(run.total_attempts), int(run.attempt_count), now_ms)
                outbox.append(DeliveryMessage(run.run_id, run.app_id))
        elif expires is not None and expires > horizon:
            # claims leave wake_at alone; one that outlives this window is looked at again
            # when it expires (within the window, the next scan sees the run anyway)
            run_data.wake_at_claim_expiry(run)
    elif fire_pipeline.is_late_first_delivery(run, now_ms):
        late.append(run)  # its message should have been consumed by now: a backlog, or lost
    elif run.deliver_at <= horizon:
        wake = int(run.deliver_at) + settings.redispatch_after_sec * 1000
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
