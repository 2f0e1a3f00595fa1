"""Models → API dictionaries (RFC 3339 times, public ids)."""

from __future__ import annotations

from typing import Any

from edgecron.clock import iso_ms
from edgecron.data.models import (
    AppModel,
    EndpointModel,
    FireModel,
    NotificationModel,
    RetryPolicyModel,
    ScheduleModel,
    TaskRunModel,
)
from edgecron.domain.attempts import Attempt


def app_view(app: AppModel) -> dict[str, Any]:
    return {
        "id": app.app_id,
        "name": app.name,
        "monthly_quota": int(app.monthly_quota) if app.monthly_quota is not None else None,
        "created_at": iso_ms(app.created_at),
    }


def endpoint_view(ep: EndpointModel) -> dict[str, Any]:
    return {
        "id": ep.endpoint_id,
        "url": ep.url,
        "description": ep.description,
        "method": ep.method,
        "headers": dict(ep.headers or {}),
        "timeout_ms": int(ep.timeout_ms),
        "retry_policy_id": ep.retry_policy_id,
        "filter_events": list(ep.filter_events or []),
        "active": bool(ep.active),
        "created_at": iso_ms(ep.created_at),
        "updated_at": iso_ms(ep.updated_at),
    }


def retry_policy_view(p: RetryPolicyModel) -> dict[str, Any]:
    return {
        "id": p.policy_id,
        "name": p.name,
        "strategy": p.strategy,
        "max_attempts": int(p.max_attempts),
        "base_delay_sec": int(p.base_delay_sec),
        "max_delay_sec": int(p.max_delay_sec),
        "jitter": bool(p.jitter),
        "created_at": iso_ms(p.created_at),
        "updated_at": iso_ms(p.updated_at),
    }


def run_view(run: TaskRunModel, *, with_payload: bool = True) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": run.run_id,
        "endpoint_id": run.endpoint_id,
        "source": run.source,
        "source_id": run.source_id,
        "fire_time": iso_ms(run.fire_at),
        "status": run.status,
        "attempt_count": int(run.attempt_count),
        "total_attempts": int(run.total_attempts),
        "series": int(run.series),
        "deliver_at": iso_ms(run.deliver_at),
        "next_retry_at": iso_ms(run.next_retry_at),
        "last_status_code": int(run.last_status_code) if run.last_status_code is not None else None,
        "last_error": run.last_error,
        "last_error_kind": run.last_error_kind,
        "created_at": iso_ms(run.created_at),
        "updated_at": iso_ms(run.updated_at),
        "finished_at": iso_ms(run.finished_at),
    }
    if with_payload:
        view["payload"] = run.payload
    return view


def attempt_view(a: Attempt) -> dict[str, Any]:
    return {
        "attempt_number": int(a.attempt_no),
        "series": int(a.series),
        "sequence": int(a.seq),
        "request_id": a.request_id,
        "status_code": int(a.status_code) if a.status_code is not None else None,
        "latency_ms": int(a.latency_ms),
        "response_summary": a.response_summary,
        "error": a.error,
        "error_kind": a.error_kind,
        "outcome": a.outcome,
        "trace_id": a.trace_id,
        "started_at": iso_ms(a.started_at),
    }


def schedule_view(s: ScheduleModel, preview: list[int] | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": s.schedule_id,
        "name": s.name,
        "cron": s.cron,
        "at": iso_ms(s.at),
        "timezone": s.timezone,
        "endpoint_ids": list(s.endpoint_ids or []),
        "payload": s.payload,
        "missed_policy": s.missed_policy,
        "retry_policy_id": s.retry_policy_id,
        "status": s.status,
        "consecutive_failures": int(s.consecutive_failures or 0),
        "next_fire_time": iso_ms(s.next_fire_at),
        "last_fire_time": iso_ms(s.last_fire_at),
        "finished": bool(s.finished),
        "missed_left_out": int(s.missed_left_out or 0),
        "created_at": iso_ms(s.created_at),
        "updated_at": iso_ms(s.updated_at),
    }
    if preview is not None:
        view["preview"] = [iso_ms(t) for t in preview]
    return view


def fire_view(f: FireModel, runs: dict[str, TaskRunModel], now_ms: int) -> dict[str, Any]:
    status = f.status
    if status == "SCHEDULED" and f.started_at is not None and now_ms >= f.fire_at:
        status = "RUNNING"
    duration = int(f.finished_at - f.started_at) if f.finished_at and f.started_at else None
    return {
        "fire_time": iso_ms(f.fire_at),
        "status": status,
        "started_at": iso_ms(f.started_at),
        "finished_at": iso_ms(f.finished_at),
        "duration_ms": duration,
        "error": f.error,
        "runs": [
            {
                "id": r.run_id,
                "endpoint_id": r.endpoint_id,
                "status": r.status,
                "attempt_count": int(r.attempt_count),
                "last_status_code": int(r.last_status_code) if r.last_status_code is not None else None,
                "last_error": r.last_error,
            }
            for r in (runs.get(run_id) for run_id in f.run_ids)
            if r is not None
        ],
    }


def notification_view(n: NotificationModel) -> dict[str, Any]:
    return {
        "id": n.notification_id,
        "kind": n.kind,
        "title": n.title,
        "message": n.message,
        "data": n.data,
        "created_at": iso_ms(n.created_at),
    }
