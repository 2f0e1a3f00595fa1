"""Listing an App's Task Runs (docs/data-model.md): keys are read newest first in batches, their
items fetched, and the filters applied here (pure logic; the reads are in data/runs.py::list_page)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edgecron.domain.expiry import is_alive

type Cursor = dict[str, Any]

# A page stops after this many index keys even when it holds fewer than `limit` runs (its cursor
# resumes after the last key read), so a filter that matches nothing never reads an App's whole
# history in one request; DynamoDB's own filtered pages stop after 1 MB read the same way.
MAX_KEYS_PER_PAGE = 500
BATCH_GET_MAX = 100  # keys per BatchGetItem


@dataclass(frozen=True)
class RunFilter:
    """What GET /v1/task-runs asks for: the App's runs that have not expired, narrowed by the
    optional filters (an empty value does not filter, as before)."""

    app_id: str
    now_ms: int
    status: str | None = None
    endpoint_id: str | None = None
    source: str | None = None
    source_id: str | None = None

    @property
    def narrows(self) -> bool:
        return bool(self.status or self.endpoint_id or self.source or self.source_id)

    def matches(self, run: Any) -> bool:
        expires_at = getattr(run, "expires_at", None)
        return (
            run.app_id == self.app_id
            and is_alive(expires_at, self.now_ms)
            and (not self.status or run.status == self.status)
            and (not self.endpoint_id or run.endpoint_id == self.endpoint_id)
            and (not self.source or run.source == self.source)
            and (not self.source_id or run.source_id == self.source_id)
        )


def batch_size(wanted: int, narrows: bool, keys_left: int) -> int:
    """How many index keys to read next: as many as runs are still wanted when nothing is filtered
    out but expired runs, a full batch when a filter may skip many; never past the page's key budget."""
    size = BATCH_GET_MAX if narrows else wanted
    return max(1, min(size, BATCH_GET_MAX, keys_left))


def select[K, T](
    keys: Sequence[K],
    items: Mapping[str, T],
    run_id_of: Callable[[K], str],
    accept: Callable[[T], bool],
    wanted: int,
) -> tuple[list[T], int]:
    """Walk `keys` in index order and keep the fetched items that `accept` takes (a key whose item
    is missing, deleted since the index was read, is skipped) until `wanted` are kept.
    Returns (the kept items, how many keys were walked); a page that stops early resumes after
    key number `walked`."""
    kept: list[T] = []
    walked = 0
    for key in keys:
        if len(kept) >= wanted:
            break
        walked += 1
        item = items.get(run_id_of(key))
        if item is not None and accept(item):
            kept.append(item)
    return kept, walked


def collect_page[K, T](
    read_keys: Callable[[Cursor | None, int], tuple[list[K], Cursor | None]],
    fetch: Callable[[list[K]], Mapping[str, T]],
    run_id_of: Callable[[K], str],
    cursor_of: Callable[[K], Cursor],
    wanted: RunFilter,
    limit: int,
    cursor: Cursor | None,
    max_keys: int = MAX_KEYS_PER_PAGE,
) -> tuple[list[T], Cursor | None]:
    """One page of up to `limit` runs that `wanted` matches, in index order, and the cursor of the
    next page (None at the end). `read_keys(start, n)` reads up to n index keys after `start` and
    returns them with the index's LastEvaluatedKey; `fetch(keys)` reads their items by run id.
    The cursor is the index key of the last run returned when the page is full (so the next page
    resumes exactly after it), else the index's LastEvaluatedKey after the last key read; a page
    stops after `max_keys` keys even if it holds fewer than `limit` runs."""
    items: list[T] = []
    start = cursor
    keys_read = 0
    while True:
        keys, after = read_keys(start, batch_size(limit - len(items), wanted.narrows, max_keys - keys_read))
        kept, walked = select(
            keys, fetch(keys) if keys else {}, run_id_of, wanted.matches, limit - len(items)
        )
        items.extend(kept)
        keys_read += walked
        if len(items) >= limit:
            return items, cursor_of(keys[walked - 1])
        if not after or not keys or keys_read >= max_keys:
            return items, after or None
        start = after
