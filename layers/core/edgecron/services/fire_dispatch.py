"""Dispatch one schedule fire, in an order that survives a crash between any two steps:
(a) create the Fire (conditional), (b) create its Task Runs (deterministic ids, conditional) and
enqueue them, (c) mark the Fire dispatched, (d) advance the schedule with a compare-and-set (last).
Two scans at once, or a retry after a crash, produce the same Fire and the same runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from edgecron import clock, ids
from edgecron.config import get_settings
from edgecron.data import endpoints as endpoint_data
from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.models import FireModel, ScheduleModel
from edgecron.data.queues import DeliveryMessage, send_deliveries
from edgecron.domain import cron
from edgecron.observability import FIRES, count, logger
from edgecron.services import fires, quota, usage
from edgecron.services.task_runs import enqueue_plan

QUOTA_EXCEEDED = "monthly quota exceeded: the fire was not run"
MAX_FIRES_PER_SCHEDULE_PER_TICK = 120  # every-second schedules: one look-ahead window (~70 fires)
INTERRUPTED_AFTER_MS = 30_000  # a Fire open this long without started_at was interrupted mid-dispatch


def run_id_for(schedule_id: str, fire_at_ms: int, endpoint_id: str) -> str:
    return ids.deterministic_id("run", schedule_id, str(fire_at_ms), endpoint_id)


def spec_of(schedule: ScheduleModel) -> cron.CronSpec | None:
    return cron.parse_cron(schedule.cron, schedule.timezone) if schedule.cron else None


def next_after_ms(schedule: ScheduleModel, after_ms: int) -> int | None:
    """The schedule's next fire strictly after `after_ms` (None for a one-time schedule)."""
    spec = spec_of(schedule)
    if spec is None:
        return None
    nxt = cron.next_fire(spec, clock.from_ms(after_ms))
    return clock.to_ms(nxt) if nxt else None


def target_endpoints(schedule: ScheduleModel) -> list[str]:
    """Explicit endpoint_ids (as bound), or every active Endpoint of the App at fire time."""
    if schedule.endpoint_ids:
        return list(schedule.endpoint_ids)
    return sorted(ep.endpoint_id for ep in endpoint_data.all_for_app(schedule.app_id) if ep.active)


@dataclass
class DispatchResult:
    fire: FireModel
    created: bool
    enqueued: int


def dispatch_fire(schedule: ScheduleModel, fire_at_ms: int, now_ms: int) -> DispatchResult:
    """Steps (a)–(c) for one fire time; idempotent."""
    endpoint_ids = target_endpoints(schedule)
    run_ids = [run_id_for(schedule.schedule_id, fire_at_ms, ep) for ep in endpoint_ids]
    status, error = fire_data.SCHEDULED, None
    over_quota = quota.over_quota(schedule.app_id, now_ms)  # only used if this call creates the Fire
    if over_quota:
        endpoint_ids, run_ids = [], []
        status, error = fire_data.FAILED, QUOTA_EXCEEDED
    elif not endpoint_ids:
        status, error = fire_data.COMPLETED, "no active endpoints at fire time"
    fire, created = fire_data.create(
        schedule.schedule_id,
        fire_at_ms,
        schedule.app_id,
        endpoint_ids,
        run_ids,
        now_ms,
        status=status,
        error=error,
    )
    if created and over_quota:  # not run, not billed, not retried; counts toward auto-pause
        fires.after_settle(fire, fire_data.FAILED, now_ms, error)
        return DispatchResult(fire, created, 0)
    if created:
        count(FIRES)
        usage.record_trigger(schedule.app_id, "schedule", now_ms)
    if fire.status not in fire_data.OPEN or fire.started_at is not None:
        return DispatchResult(fire, created, 0)  # settled, or dispatched by an earlier attempt
    if not created and now_ms - int(fire.created_at) < INTERRUPTED_AFTER_MS:
        return DispatchResult(fire, created, 0)  # another scan is dispatching it right now
    send_now, wake_at = enqueue_plan(fire_at_ms, now_ms)
    messages = []
    for endpoint_id, run_id in zip(fire.endpoint_ids, fire.run_ids, strict=True):
        run = run_data.new_run(
            run_id=run_id,
            app_id=schedule.app_id,
            endpoint_id=endpoint_id,
            source="schedule",
            source_id=schedule.schedule_id,
            payload=schedule.payload,
            deliver_at_ms=fire_at_ms,
            wake_at_ms=wake_at,
            now_ms=now_ms,
            fire_at=fire_at_ms,
            retry_policy_id=schedule.retry_policy_id,
        )
        run_data.put_new(run)
        messages.append(DeliveryMessage(run_id, schedule.app_id, due_ms=fire_at_ms))
    if send_now:
        failed = send_deliveries(messages)
        if failed:
            logger.warning("fire runs not enqueued; redispatched by the scan", extra={"count": len(failed)})
    fire_data.mark_dispatched(fire, now_ms)
    return DispatchResult(fire, created, len(messages) if send_now else 0)


def dispatch_due(schedule: ScheduleModel, now: datetime, horizon_ms: int) -> int:
    """Dispatch every fire of `schedule` due up to `horizon_ms`, advancing it after each (step d).
    Returns the number of fires handled; stops when another writer moved the schedule first."""
    now_ms = clock.to_ms(now)
    handled = 0
    while (
        schedule.next_fire_at is not None
        and schedule.next_fire_at <= horizon_ms
        and handled < MAX_FIRES_PER_SCHEDULE_PER_TICK
    ):
        fire_at = int(schedule.next_fire_at)
        dispatch_fire(schedule, fire_at, now_ms)
        nxt = next_after_ms(schedule, fire_at)
        if not schedule_data.advance(schedule, fire_at, nxt, now_ms):
            break
        handled += 1
    return handled


def lookahead_ms() -> int:
    return get_settings().lookahead_sec * 1000
