"""Endpoints: where to deliver. Every read is keyed by (app_id, endpoint_id), so Apps never mix.
Reads return `Endpoint` entities; writes take them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron.data.conditional import save_if_unchanged
from edgecron.data.models import EndpointModel, SigningSecret
from edgecron.data.paging import Page, query_page
from edgecron.domain.endpoints import Endpoint, SealedSecret
from edgecron.domain.vocabulary import HttpMethod

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
    )


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


def save(endpoint: Endpoint) -> Endpoint | None:
    """Compare-and-set: write the whole item only if nobody changed it since it was read (its stored
    version is still `endpoint.version`), moving the version on. Returns what was written, or None
    for a save from a stale read, which changes nothing."""
    row = _row(endpoint)
    return to_entity(row) if save_if_unchanged(row, M.endpoint_id.exists()) else None


def delete(endpoint: Endpoint) -> None:
    M(app_id=endpoint.app_id, endpoint_id=endpoint.endpoint_id).delete()


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[Endpoint]:
    page = query_page(M, app_id, limit, cursor, newest_first=True)
    return Page([to_entity(row) for row in page.items], page.last_key)


def all_for_app(app_id: str) -> Iterator[Endpoint]:
    for row in M.query(app_id):
        yield to_entity(row)
