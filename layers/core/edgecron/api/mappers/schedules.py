"""Entity → response model: Schedules and their Fires."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edgecron.api.mappers import optional_int
from edgecron.clock import iso_ms
from edgecron.domain import cron as cron_rules
from edgecron.domain.fires import Fire
from edgecron.domain.schedules import ScheduleView
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import MissedPolicy, OverlapPolicy, RunStatus, ScheduleStatus
from edgecron.schemas.schedules import FireOut, FireRunOut, ScheduleOut


def schedule_out(v: ScheduleView) -> ScheduleOut:
    s = v.schedule
    fields: dict[str, Any] = {}
    if v.preview is not None:
        fields["preview"] = [iso_ms(t) or "" for t in v.preview]
    return ScheduleOut(
        id=s.schedule_id,
        name=s.name,
        cron=s.cron,
        cron_equivalent=cron_rules.equivalent(s.cron),
        at=iso_ms(s.at),
        timezone=s.timezone,
        endpoint_ids=list(s.endpoint_ids or []),
        payload=s.payload,
        missed_policy=MissedPolicy(s.missed_policy),
        retry_policy_id=s.retry_policy_id,
        status=ScheduleStatus(s.status),
        pause_reason=s.pause_reason if s.status == ScheduleStatus.PAUSED else None,
        consecutive_failures=int(s.consecutive_failures or 0),
        next_fire_time=iso_ms(v.next_fire_at),
        last_fire_time=iso_ms(v.last_fire_at),
        start_at=iso_ms(s.start_at),
        end_at=iso_ms(s.end_at),
        jitter_sec=int(s.jitter_sec or 0),
        overlap_policy=OverlapPolicy(s.overlap_policy or OverlapPolicy.ALLOW),
        finished=bool(s.finished),
        missed_left_out=int(s.missed_left_out or 0),
        created_at=iso_ms(s.created_at) or "",
        updated_at=iso_ms(s.updated_at) or "",
        **fields,
    )


def fire_out(f: Fire, runs: Mapping[str, TaskRun], now_ms: int) -> FireOut:
    """A Fire with its runs (`runs`: those read for a page of Fires, by id; a broadcast Fire's are
    its first ones); a SCHEDULED fire already started and due reads as RUNNING."""
    own = [r for r in runs.values() if r.source_id == f.schedule_id and r.fire_at == f.fire_at]
    # a run cancelled by its worker's last check before the request made no attempt: no status code
    attempted = any(r.status != RunStatus.CANCELLED or r.last_status_code is not None for r in own)
    return FireOut(
        fire_time=iso_ms(f.fire_at) or "",
        manual=f.manual,
        due_at=iso_ms(f.due_ms) or "",
        status=f.shown_status(now_ms),
        started_at=iso_ms(f.began_at(attempted)),
        finished_at=iso_ms(f.finished_at),
        duration_ms=f.duration_ms(attempted),
        error=f.error,
        runs=[
            FireRunOut(
                id=r.run_id,
                endpoint_id=r.endpoint_id,
                status=RunStatus(r.status),
                attempt_count=int(r.attempt_count),
                last_status_code=optional_int(r.last_status_code),
                last_error=r.last_error,
            )
            for r in own
        ],
    )
