"""Cursor pagination over DynamoDB queries: the cursor is the query's LastEvaluatedKey."""

from __future__ import annotations

from collections.abc import Iterator
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


def query_pages(
    model: Any,
    hash_key: str,
    cursor: dict[str, Any] | None,
    page_size: int,
    *,
    oldest_first: bool = True,
    index: Any = None,
    range_key_condition: Any = None,
    filter_condition: Any = None,
) -> Iterator[Page[Any]]:
    """The query's DynamoDB pages one by one, each read only when asked for: at most `page_size`
    items evaluated per page (filtered-out ones count), so a caller that stops between two pages has
    done bounded work whatever the filter matches. Each page's `last_key` resumes right after it
    (None after the last page)."""
    source = index if index is not None else model
    result = source.query(
        hash_key,
        range_key_condition=range_key_condition,
        filter_condition=filter_condition,
        scan_index_forward=oldest_first,
        last_evaluated_key=cursor,
        page_size=page_size,
    )
    pages = result.page_iter
    for page in pages:
        items = [model.from_raw_data(raw) for raw in page.get("Items", [])]
        yield Page(items=items, last_key=pages.last_evaluated_key or None)
