"""Entity → response model: Endpoints, and what recovering their failed runs did."""

from __future__ import annotations

from typing import Any

from edgecron.api.pagination import encode_cursor
from edgecron.clock import iso_ms
from edgecron.domain.endpoints import Endpoint
from edgecron.schemas.endpoints import EndpointHealthOut, EndpointOut, EndpointWithSecret, RecoverResult


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


def recover_result(result: Any) -> RecoverResult:
    return RecoverResult(
        recovered=result.recovered, has_more=result.has_more, next_cursor=encode_cursor(result.next_key)
    )
