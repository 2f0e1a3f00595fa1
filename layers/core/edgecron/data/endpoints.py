"""Endpoints: where to deliver. Every read is keyed by (app_id, endpoint_id), so Apps never mix."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron.data.models import EndpointModel
from edgecron.data.paging import Page, query_page


def get(app_id: str, endpoint_id: str) -> EndpointModel | None:
    try:
        return EndpointModel.get(app_id, endpoint_id)
    except DoesNotExist:
        return None


def put_new(endpoint: EndpointModel) -> None:
    endpoint.save(condition=EndpointModel.endpoint_id.does_not_exist())


def save(endpoint: EndpointModel) -> None:
    endpoint.save(condition=EndpointModel.endpoint_id.exists())


def delete(endpoint: EndpointModel) -> None:
    endpoint.delete()


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[EndpointModel]:
    return query_page(EndpointModel, app_id, limit, cursor, newest_first=True)


def all_for_app(app_id: str) -> Iterator[EndpointModel]:
    yield from EndpointModel.query(app_id)
