"""Models → API dictionaries (RFC 3339 times, public ids)."""

from __future__ import annotations

from typing import Any

from edgecron.clock import iso_ms
from edgecron.data.models import AppModel, AttemptModel, EndpointModel, RetryPolicyModel, TaskRunModel


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


def attempt_view(a: AttemptModel) -> dict[str, Any]:
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
