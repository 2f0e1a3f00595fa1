"""The scan (every minute): dispatch what is due within the look-ahead window so SQS DelaySeconds
lands it on the second, and heal what a crash or a lost message left behind. Everything is driven
from DynamoDB, so losing every queued message loses no run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import runs as run_data
from edgecron.data.models import TaskRunModel
from edgecron.data.queues import DeliveryMessage, send_deliveries
from edgecron.domain import run_states as st
from edgecron.observability import SCAN_DURATION_MS, logger, millis
from edgecron.services import schedules_scan
from edgecron.services.delivery import record_lost_attempt


@dataclass
class ScanReport:
    runs_enqueued: int = 0
    claims_released: int = 0
    stale_index_entries: int = 0
    extra: dict[str, int] = field(default_factory=dict)
    duration_ms: int = 0


def run_scan(now: datetime, *, rebuild: bool = False) -> ScanReport:
    """One scan tick. `rebuild` re-enqueues every waiting run due within the window even if it was
    enqueued before (the local stack does that after restoring a snapshot without queue contents)."""
    started = time.perf_counter()
    report = ScanReport()
    schedules = schedules_scan.dispatch_schedules(now)
    report.extra.update(schedules.__dict__)
    dispatch_runs(now, report, rebuild=rebuild)
    report.duration_ms = int((time.perf_counter() - started) * 1000)
    millis(SCAN_DURATION_MS, report.duration_ms)
    logger.info("scan finished", extra={"report": report.__dict__})
    return report


def dispatch_runs(now: datetime, report: ScanReport, *, rebuild: bool = False) -> None:
    """Walk the wake index: enqueue due waiting runs, release expired claims (a worker died and its
    message is gone), drop stale entries."""
    settings = get_settings()
    now_ms = clock.to_ms(now)
    horizon = now_ms + settings.lookahead_sec * 1000
    to_send: list[tuple[TaskRunModel, DeliveryMessage]] = []
    late: list[TaskRunModel] = []
    for shard in range(settings.shards):
        for run in run_data.wake_due(str(shard), None if rebuild else horizon):
            if run.status in st.TERMINAL:
                report.stale_index_entries += run_data.drop_from_wake_index(run)
            elif run.status == st.RUNNING:
                expires = run.claim_expires_at
                if expires is not None and expires < now_ms:
                    wake = now_ms + settings.redispatch_after_sec * 1000
                    if run_data.release_expired_claim(run, now_ms, wake):
                        report.claims_released += 1
                        record_lost_attempt(run, int(run.total_attempts), int(run.attempt_count), now_ms)
                        to_send.append((run, DeliveryMessage(run.run_id, run.app_id)))
                elif expires is not None and expires > horizon:
                    # claims leave wake_at alone; one that outlives this window is looked at again
                    # when it expires (within the window, the next scan sees the run anyway)
                    run_data.wake_at_claim_expiry(run)
            elif schedules_scan.is_late_first_delivery(run, now_ms):
                late.append(run)  # its message was lost long enough for the fire to count as missed
            elif run.deliver_at <= horizon:
                wake = int(run.deliver_at) + settings.redispatch_after_sec * 1000
                if run_data.mark_enqueued(run, wake):
                    to_send.append((run, DeliveryMessage(run.run_id, run.app_id, due_ms=int(run.deliver_at))))
    for run in schedules_scan.settle_late_fires(late, now):
        to_send.append((run, DeliveryMessage(run.run_id, run.app_id)))
    failed = set(send_deliveries([m for _, m in to_send], retry=True))
    report.runs_enqueued += len(to_send) - len(failed)
    if failed:
        logger.warning(
            "some runs could not be enqueued; they are redispatched after REDISPATCH_AFTER_SEC",
            extra={"count": len(failed)},
        )
