"""Cursor pagination over DynamoDB queries: the cursor is the query's LastEvaluatedKey."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class Page[T]:
    items: list[T]
    last_key: dict[str, Any] | None


def query_page(
    model: Any,
    hash_key: str,
    limit: int,
    cursor: dict[str, Any] | None,
    *,
    newest_first: bool = True,
    index: Any = None,
    range_key_condition: Any = None,
    filter_condition: Any = None,
) -> Page[Any]:
    """One page of `limit` items. PynamoDB keeps reading past filtered-out items and reports the
    key of the last item it yielded, so the cursor resumes exactly after it."""
    source = index if index is not None else model
    result = source.query(
        hash_key,
        range_key_condition=range_key_condition,
        filter_condition=filter_condition,
        scan_index_forward=not newest_first,
        limit=limit,
        last_evaluated_key=cursor,
        page_size=limit if filter_condition is None else max(limit, 50),
    )
    items = list(result)
    last = result.last_evaluated_key if len(items) >= limit else None
    return Page(items=items, last_key=last or None)
