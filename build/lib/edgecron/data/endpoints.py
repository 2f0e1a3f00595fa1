"""Endpoints: where to deliver. Every read is keyed by (app_id, endpoint_id), so Apps never mix.
Reads return `Endpoint` entities; writes take them.

Two kinds of writer share an item: users (create, update, rotate: a compare-and-set on `version`
that writes the user's fields only) and the delivery path (health: atomic counters that never
touch the user's fields). Neither can undo the other's write; disabling an Endpoint for failing
moves `version`, so a user's update racing it is applied again to the disabled Endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron.data.conditional import update_if
from edgecron.data.keys import at_version
from edgecron.data.models import EndpointModel, SigningSecret
from edgecron.data.paging import Page, query_page
from edgecron.domain.endpoint_health import (
    DEFAULT_DISABLE_AFTER_FAILURES,
    DEFAULT_DISABLE_AFTER_SEC,
    EndpointHealth,
)
from edgecron.domain.endpoints import Endpoint, SealedSecret
from edgecron.domain.vocabulary import DisabledReason, HttpMethod

M = EndpointModel


def to_entity(row: EndpointModel) -> Endpoint:
    return Endpoint(
        app_id=row.app_id,
        endpoint_id=row.endpoint_id,
        url=row.url,
        description=row.description,
        method=HttpMethod(row.method),
        headers=row.headers if row.headers is not None else {},
        timeout_ms=int(row.timeout_ms),
        retry_policy_id=row.retry_policy_id,
        filter_events=tuple(row.filter_events or ()),
        active=bool(row.active),
        secrets=tuple(
            SealedSecret(
                secret=str(s.secret),
                created_at=int(s.created_at),
                expires_at=int(s.expires_at) if s.expires_at is not None else None,
            )
            for s in row.secrets or ()
        ),
        created_at=int(row.created_at),
        updated_at=int(row.updated_at),
        version=int(row.version) if row.version is not None else None,
        disable_after_failures=_int_or(row.disable_after_failures, DEFAULT_DISABLE_AFTER_FAILURES),
        disable_after_sec=_int_or(row.disable_after_sec, DEFAULT_DISABLE_AFTER_SEC),
        disabled_reason=DisabledReason(row.disabled_reason) if row.disabled_reason else None,
        health=EndpointHealth(
            consecutive_failures=_int_or(row.health_failures, 0),
            failing_since=_int_or(row.health_failing_since, None),
            last_success_at=_int_or(row.health_last_success_at, None),
        ),
        max_per_sec=float(row.max_per_sec) if row.max_per_sec is not None else None,
        max_in_flight=_int_or(row.max_in_flight, None),
    )


def _int_or[T](value: float | None, default: T) -> int | T:
    return int(value) if value is not None else default


def _row(endpoint: Endpoint) -> EndpointModel:
    return M(
        app_id=endpoint.app_id,
        endpoint_id=endpoint.endpoint_id,
        url=endpoint.url,
        description=endpoint.description,
        method=str(endpoint.method),
        headers=endpoint.headers,
        timeout_ms=endpoint.timeout_ms,
        retry_policy_id=endpoint.retry_policy_id,
        filter_events=list(endpoint.filter_events),
        active=endpoint.active,
        secrets=[
            SigningSecret(secret=s.secret, created_at=s.created_at, expires_at=s.expires_at)
            for s in endpoint.secrets
        ],
        created_at=endpoint.created_at,
        updated_at=endpoint.updated_at,
        version=endpoint.version,
        disable_after_failures=endpoint.disable_after_failures,
        disable_after_sec=endpoint.disable_after_sec,
        disabled_reason=str(endpoint.disabled_reason) if endpoint.disabled_reason else None,
        max_per_sec=endpoint.max_per_sec,
        max_in_flight=endpoint.max_in_flight,
    )


# What a user's save writes; the health attributes are the delivery path's.
_USER_FIELDS = (
    "url",
    "description",
    "method",
    "headers",
    "timeout_ms",
    "retry_policy_id",
    "filter_events",
    "active",
    "secrets",
    "updated_at",
    "disable_after_failures",
    "disable_after_sec",
    "disabled_reason",
    "max_per_sec",
    "max_in_flight",
)


def get(app_id: str, endpoint_id: str, *, consistent: bool = False) -> Endpoint | None:
    try:
        return to_entity(M.get(app_id, endpoint_id, consistent_read=consistent))
    except DoesNotExist:
        return None


def put_new(endpoint: Endpoint) -> Endpoint:
    """Create the item (a conditional put: never over another one); returns it at version 1."""
    row = _row(endpoint)
    row.version = 1
    row.save(condition=M.endpoint_id.does_not_exist())
    return to_entity(row)


def save(endpoint: Endpoint, *, reset_health: bool = False) -> Endpoint | None:
    """Compare-and-set: write the user's fields only if nobody changed them since they were read (the
    stored version is still `endpoint.version`), moving the version on; `reset_health` also clears
    the failing streak (a re-enable). Returns the stored Endpoint, or None for a save from a stale
    read, which changes nothing."""
    row = _row(endpoint)
    actions: list[Any] = []
    for name in _USER_FIELDS:
        attr, value = getattr(M, name), getattr(row, name)
        actions.append(attr.remove() if value is None else attr.set(value))
    if reset_health:
        actions += [M.health_failures.remove(), M.health_failing_since.remove()]
    actions.append(M.version.set(int(endpoint.version or 0) + 1))
    item = M(app_id=endpoint.app_id, endpoint_id=endpoint.endpoint_id)
    unchanged = M.endpoint_id.exists() & at_version(M, endpoint.version)
    return to_entity(item) if update_if(item, actions, unchanged) else None


def record_failure(app_id: str, endpoint_id: str, now_ms: int) -> Endpoint | None:
    """One more failed run in the streak (atomic, so concurrent workers never lose one); the
    Endpoint as stored afterwards, or None if it was deleted."""
    item = M(app_id=app_id, endpoint_id=endpoint_id)
    actions = [M.health_failures.add(1), M.health_failing_since.set(M.health_failing_since | now_ms)]
    return to_entity(item) if update_if(item, actions, M.endpoint_id.exists()) else None


def record_success(app_id: str, endpoint_id: str, now_ms: int) -> bool:
    """A success ends the streak and is the last success on record."""
    item = M(app_id=app_id, endpoint_id=endpoint_id)
    actions = [
        M.health_failures.remove(),
        M.health_failing_since.remove(),
        M.health_last_success_at.set(now_ms),
    ]
    return update_if(item, actions, M.endpoint_id.exists())


def claim_failing_warning(app_id: str, endpoint_id: str, now_ms: int, quiet_ms: int) -> bool:
    """Whether this caller warns that the Endpoint is failing: at most one warning per `quiet_ms`, so
    an Endpoint that flaps between success and failure does not warn on every streak."""
    item = M(app_id=app_id, endpoint_id=endpoint_id)
    quiet = M.health_warned_at.does_not_exist() | (M.health_warned_at <= now_ms - quiet_ms)
    return update_if(item, [M.health_warned_at.set(now_ms)], M.endpoint_id.exists() & quiet)


def disable_failing(app_id: str, endpoint_id: str, now_ms: int) -> Endpoint | None:
    """Turn a still-active Endpoint off for failing; only one caller wins (it notifies)."""
    item = M(app_id=app_id, endpoint_id=endpoint_id)
    actions = [
        M.active.set(False),
        M.disabled_reason.set(str(DisabledReason.FAILING)),
        M.updated_at.set(now_ms),
        M.version.add(1),
    ]
    still_active = M.endpoint_id.exists() & (M.active == True)  # noqa: E712 (a condition, not a test)
    return to_entity(item) if update_if(item, actions, still_active) else None


def delete(endpoint: Endpoint) -> None:
    M(app_id=endpoint.app_id, endpoint_id=endpoint.endpoint_id).delete()


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[Endpoint]:
    page = query_page(M, app_id, limit, cursor, newest_first=True)
    return Page([to_entity(row) for row in page.items], page.last_key)


def all_for_app(app_id: str, *, consistent: bool = False) -> Iterator[Endpoint]:
    for row in M.query(app_id, consistent_read=consistent):
        yield to_entity(row)
