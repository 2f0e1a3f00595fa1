"""Entity → response model, one mapper per resource: the only place a response is shaped (RFC 3339
times, public ids, the vocabulary's members)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from edgecron.api.pagination import encode_cursor
from edgecron.clock import iso_ms
from edgecron.domain import cron as cron_rules
from edgecron.domain.api_keys import ApiKey
from edgecron.domain.apps import App
from edgecron.domain.attempts import Attempt
from edgecron.domain.endpoints import Endpoint
from edgecron.domain.fires import Fire
from edgecron.domain.notifications import Notification
from edgecron.domain.retry_policies import RetryPolicy
from edgecron.domain.schedules import ScheduleView
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import (
    ErrorKind,
    FanoutStatus,
    KeyRole,
    MissedPolicy,
    OverlapPolicy,
    RunStatus,
    ScheduleStatus,
    Source,
)
from edgecron.schemas.apps import AccountOut, AppCreated, AppOut, KeyOut
from edgecron.schemas.endpoints import EndpointHealthOut, EndpointOut, EndpointWithSecret, RecoverResult
from edgecron.schemas.events import EventDelivery, EventDetail, EventOut, EventSummary
from edgecron.schemas.retry_policies import RetryPolicyOut
from edgecron.schemas.schedules import FireOut, FireRunOut, NotificationOut, ScheduleOut, UsageOut
from edgecron.schemas.task_runs import AttemptOut, ReplayResult, TaskRunOut, TaskRunSummary


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def _kind(value: Any) -> ErrorKind | None:
    return ErrorKind(value) if value else None


def app_out(app: App) -> AppOut:
    return AppOut(
        id=app.app_id,
        name=app.name,
        monthly_quota=app.monthly_quota,
        created_at=iso_ms(app.created_at) or "",
    )


def app_created(app: App, api_key: str) -> AppCreated:
    return AppCreated(app=app_out(app), api_key=api_key)


def key_out(key: ApiKey) -> KeyOut:
    return KeyOut(
        id=key.key_id,
        prefix=key.prefix,
        name=key.name,
        state=key.state(),
        created_at=iso_ms(key.created_at) or "",
        last_used_at=iso_ms(key.last_used_at),
        expires_at=iso_ms(key.expires_at * 1000) if key.expires_at is not None else None,
        replaced_by=key.replaced_by,
    )


def account_out(role: KeyRole, app_id: str | None) -> AccountOut:
    return AccountOut(role=role, app_id=app_id)


def _endpoint_fields(ep: Endpoint) -> dict[str, Any]:
    return {
        "id": ep.endpoint_id,
        "url": ep.url,
        "description": ep.description,
        "method": ep.method,
        "headers": dict(ep.headers or {}),
        "timeout_ms": ep.timeout_ms,
        "retry_policy_id": ep.retry_policy_id,
        "filter_events": list(ep.filter_events),
        "active": ep.active,
        "disabled_reason": ep.disabled_reason,
        "disable_after_failures": ep.disable_after_failures,
        "disable_after_sec": ep.disable_after_sec,
        "max_per_sec": ep.max_per_sec,
        "max_in_flight": ep.max_in_flight,
        "health": EndpointHealthOut(
            state=ep.health_state,
            consecutive_failures=ep.health.consecutive_failures,
            failing_since=iso_ms(ep.health.failing_since),
            last_success_at=iso_ms(ep.health.last_success_at),
        ),
        "created_at": iso_ms(ep.created_at) or "",
        "updated_at": iso_ms(ep.updated_at) or "",
    }


def endpoint_out(ep: Endpoint) -> EndpointOut:
    return EndpointOut(**_endpoint_fields(ep))


def endpoint_with_secret(ep: Endpoint, secret: str | None) -> EndpointWithSecret:
    """The one answer that shows a signing secret; None leaves the field out."""
    if secret is None:
        return EndpointWithSecret(**_endpoint_fields(ep))
    return EndpointWithSecret(**_endpoint_fields(ep), secret=secret)


def retry_policy_out(p: RetryPolicy) -> RetryPolicyOut:
    return RetryPolicyOut(
        id=p.policy_id,
        name=p.name,
        strategy=p.strategy,
        max_attempts=p.max_attempts,
        base_delay_sec=p.base_delay_sec,
        max_delay_sec=p.max_delay_sec,
        jitter=p.jitter,
        created_at=iso_ms(p.created_at),
        updated_at=iso_ms(p.updated_at),
    )


def _run_fields(run: TaskRun) -> dict[str, Any]:
    return {
        "id": run.run_id,
        "endpoint_id": run.endpoint_id,
        "source": Source(run.source),
        "source_id": run.source_id,
        "fire_time": iso_ms(run.fire_at),
        "status": RunStatus(run.status),
        "attempt_count": int(run.attempt_count),
        "total_attempts": int(run.total_attempts),
        "series": int(run.series),
        "deliver_at": iso_ms(run.deliver_at),
        "next_retry_at": iso_ms(run.next_retry_at),
        "last_status_code": _int(run.last_status_code),
        "last_error": run.last_error,
        "last_error_kind": _kind(run.last_error_kind),
        "created_at": iso_ms(run.created_at) or "",
        "updated_at": iso_ms(run.updated_at) or "",
        "finished_at": iso_ms(run.finished_at),
    }


def task_run_out(run: TaskRun) -> TaskRunOut:
    return TaskRunOut(**_run_fields(run), payload=run.payload)


def task_run_summary(run: TaskRun) -> TaskRunSummary:
    """A run in a list: without its payload."""
    return TaskRunSummary(**_run_fields(run))


def attempt_out(a: Attempt) -> AttemptOut:
    return AttemptOut(
        attempt_number=int(a.attempt_no),
        series=int(a.series),
        sequence=int(a.seq),
        request_id=a.request_id,
        status_code=_int(a.status_code),
        latency_ms=int(a.latency_ms),
        response_summary=a.response_summary,
        error=a.error,
        error_kind=_kind(a.error_kind),
        error_detail=a.error_detail,
        outcome=a.outcome,
        trace_id=a.trace_id,
        started_at=iso_ms(a.started_at) or "",
    )


def replay_result(result: Any) -> ReplayResult:
    return ReplayResult(
        replayed=result.replayed,
        skipped=result.skipped,
        has_more=result.has_more,
        next_cursor=encode_cursor(result.next_key),
    )


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
                last_status_code=_int(r.last_status_code),
                last_error=r.last_error,
            )
            for r in own
        ],
    )


def notification_out(n: Notification) -> NotificationOut:
    return NotificationOut(
        id=n.notification_id,
        kind=n.kind,
        title=n.title,
        message=n.message,
        data=n.data,
        created_at=iso_ms(n.created_at) or "",
    )


def usage_out(month: str, counts: Mapping[str, int], monthly_quota: int | None) -> UsageOut:
    return UsageOut(month=month, **counts, monthly_quota=monthly_quota)


def _event_fields(event: Any, matched: int) -> dict[str, Any]:
    return {
        "id": event.event_id,
        "name": event.name,
        "idempotency_key": event.idempotency_key,
        "fanout_status": FanoutStatus(event.fanout_status),
        "fanout_error": event.fanout_error,
        "matched_endpoints": matched,
        "created_at": iso_ms(event.created_at) or "",
    }


def event_out(event: Any, matched: int) -> EventOut:
    return EventOut(**_event_fields(event, matched), payload=event.payload)


def event_summary(event: Any, matched: int) -> EventSummary:
    return EventSummary(**_event_fields(event, matched))


def event_delivery(d: Any) -> EventDelivery:
    run = d.run
    return EventDelivery(
        endpoint_id=d.endpoint_id,
        task_run_id=d.run_id,
        status=RunStatus(run.status) if run else None,
        attempt_count=int(run.attempt_count) if run else 0,
        last_status_code=_int(run.last_status_code) if run else None,
        last_error=run.last_error if run else None,
    )


def event_detail(event: Any, matched: int, deliveries: Sequence[Any], next_cursor: str | None) -> EventDetail:
    return EventDetail(
        **_event_fields(event, matched),
        payload=event.payload,
        deliveries=[event_delivery(d) for d in deliveries],
        deliveries_next_cursor=next_cursor,
    )


def recover_result(result: Any) -> RecoverResult:
    return RecoverResult(
        recovered=result.recovered, has_more=result.has_more, next_cursor=encode_cursor(result.next_key)
    )
