"""Endpoints: where to deliver. Every read is keyed by (app_id, endpoint_id), so Apps never mix."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron.data.conditional import save_if_unchanged
from edgecron.data.models import EndpointModel
from edgecron.data.paging import Page, query_page


def get(app_id: str, endpoint_id: str, *, consistent: bool = False) -> EndpointModel | None:
    try:
        return EndpointModel.get(app_id, endpoint_id, consistent_read=consistent)
    except DoesNotExist:
        return None


def put_new(endpoint: EndpointModel) -> None:
    endpoint.version = 1
    endpoint.save(condition=EndpointModel.endpoint_id.does_not_exist())


def save(endpoint: EndpointModel) -> bool:
    """Write the whole item only if nobody changed it since it was read (its version is the one
    read), moving the version on; a save from a stale read changes nothing and returns False."""
    return save_if_unchanged(endpoint, EndpointModel.endpoint_id.exists())


def delete(endpoint: EndpointModel) -> None:
    endpoint.delete()


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[EndpointModel]:
    return query_page(EndpointModel, app_id, limit, cursor, newest_first=True)


def all_for_app(app_id: str) -> Iterator[EndpointModel]:
    yield from EndpointModel.query(app_id)
