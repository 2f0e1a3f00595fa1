"""Listing Task Runs from a keys-only index: the filter, the batch sizes and the paging loop, run
against an in-memory index that behaves like a DynamoDB query (Limit, LastEvaluatedKey)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

from edgecron.domain.run_listing import (
    BATCH_GET_MAX,
    MAX_KEYS_PER_PAGE,
    Cursor,
    RunFilter,
    batch_size,
    collect_page,
    select,
)

NOW_MS = 1_800_000_000_000


@dataclass(frozen=True)
class Run:
    run_id: str
    app_id: str = "app_1"
    status: str = "pending"
    endpoint_id: str = "ep_1"
    source: str = "direct"
    source_id: str | None = None
    expires_at: int | None = None


@pytest.mark.parametrize(
    ("run", "flt", "expected"),
    [
        (Run("r"), RunFilter("app_1", NOW_MS), True),
        (Run("r", app_id="app_2"), RunFilter("app_1", NOW_MS), False),  # never another App's run
        (Run("r", expires_at=NOW_MS // 1000), RunFilter("app_1", NOW_MS), False),  # expired
        (Run("r", expires_at=NOW_MS // 1000 + 1), RunFilter("app_1", NOW_MS), True),
        (Run("r", status="success"), RunFilter("app_1", NOW_MS, status="success"), True),
        (Run("r"), RunFilter("app_1", NOW_MS, status="success"), False),
        (Run("r"), RunFilter("app_1", NOW_MS, status=""), True),  # an empty value does not filter
        (Run("r", endpoint_id="ep_2"), RunFilter("app_1", NOW_MS, endpoint_id="ep_1"), False),
        (Run("r", source="event"), RunFilter("app_1", NOW_MS, source="event"), True),
        (Run("r", source="event"), RunFilter("app_1", NOW_MS, source="schedule"), False),
        (Run("r", source_id="sch_1"), RunFilter("app_1", NOW_MS, source_id="sch_1"), True),
        (Run("r", source_id=None), RunFilter("app_1", NOW_MS, source_id="sch_1"), False),
        (
            Run("r", status="failed", endpoint_id="ep_2", source="schedule", source_id="sch_1"),
            RunFilter("app_1", NOW_MS, "failed", "ep_2", "schedule", "sch_1"),
            True,
        ),
    ],
)
def test_filter(run: Run, flt: RunFilter, expected: bool) -> None:
    assert flt.matches(run) is expected


def test_filter_narrows_only_with_a_value() -> None:
    assert not RunFilter("app_1", NOW_MS).narrows
    assert not RunFilter("app_1", NOW_MS, status="", source=None).narrows
    assert RunFilter("app_1", NOW_MS, endpoint_id="ep_1").narrows


def test_batch_size() -> None:
    assert batch_size(20, narrows=False, keys_left=500) == 20  # unfiltered: just what is wanted
    assert batch_size(20, narrows=True, keys_left=500) == BATCH_GET_MAX  # filtered: a full batch
    assert batch_size(20, narrows=True, keys_left=30) == 30  # never past the page's key budget
    assert batch_size(500, narrows=False, keys_left=500) == BATCH_GET_MAX  # one BatchGetItem
    assert batch_size(0, narrows=False, keys_left=0) == 1


def test_select_stops_at_wanted_and_skips_missing_items() -> None:
    keys = ["a", "b", "c", "d", "e"]
    items = {k: Run(k, status="x" if k in "bde" else "y") for k in keys if k != "d"}  # d vanished
    kept, walked = select(keys, items, lambda k: k, lambda r: r.status == "x", 2)
    assert [r.run_id for r in kept] == ["b", "e"] and walked == 5
    kept, walked = select(keys, items, lambda k: k, lambda r: True, 2)
    assert [r.run_id for r in kept] == ["a", "b"] and walked == 2  # the page resumes after "b"
    assert select(keys, items, lambda k: k, lambda r: True, 0) == ([], 0)


class FakeIndex:
    """The `by_app` index of one App newest first, answering like a DynamoDB query: up to `n` keys
    after the exclusive start key, and a LastEvaluatedKey when it stopped at the limit."""

    def __init__(self, runs: list[Run]) -> None:
        self.keys = [r.run_id for r in runs]  # already in index order
        self.items = {r.run_id: r for r in runs}
        self.reads: list[int] = []  # keys read per query
        self.fetched = 0

    def read(self, start: Cursor | None, n: int) -> tuple[list[str], Cursor | None]:
        pos = 0 if start is None else self.keys.index(start["run_id"]["S"]) + 1
        out = self.keys[pos : pos + n]
        self.reads.append(len(out))
        last = self.cursor_of(out[-1]) if len(out) == n and out else None
        return out, last

    def fetch(self, keys: list[str]) -> dict[str, Run]:
        assert len(keys) <= BATCH_GET_MAX
        self.fetched += len(keys)
        return {k: self.items[k] for k in keys if k in self.items}

    @staticmethod
    def cursor_of(key: str) -> Cursor:
        return {"run_id": {"S": key}, "app_id": {"S": "app_1"}, "created_key": {"S": f"ck#{key}"}}

    def page(self, flt: RunFilter, limit: int, cursor: Cursor | None, **kw: Any) -> tuple[list[Run], Any]:
        return collect_page(self.read, self.fetch, lambda k: k, self.cursor_of, flt, limit, cursor, **kw)

    def all_pages(self, flt: RunFilter, limit: int, **kw: Any) -> list[list[Run]]:
        pages: list[list[Run]] = []
        cursor = None
        while True:
            items, cursor = self.page(flt, limit, cursor, **kw)
            pages.append(items)
            assert len(items) <= limit
            if cursor is None:
                return pages
            assert len(pages) < 1000, "paging does not end"


def history(n: int, seed: int = 7) -> list[Run]:
    rng = random.Random(seed)
    return [
        Run(
            f"run_{n - i:05d}",
            status=rng.choice(["pending", "success", "failed"]),
            endpoint_id=rng.choice(["ep_1", "ep_2", "ep_3"]),
            source=rng.choice(["direct", "event", "schedule"]),
            expires_at=NOW_MS // 1000 - 1 if rng.random() < 0.05 else None,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("limit", [1, 7, 20, 100])
@pytest.mark.parametrize(
    "flt",
    [
        RunFilter("app_1", NOW_MS),
        RunFilter("app_1", NOW_MS, status="failed"),
        RunFilter("app_1", NOW_MS, status="success", endpoint_id="ep_2", source="event"),
    ],
)
def test_pages_hold_every_match_once_in_index_order(limit: int, flt: RunFilter) -> None:
    runs = history(700)
    index = FakeIndex(runs)
    pages = index.all_pages(flt, limit)
    listed = [r.run_id for page in pages for r in page]
    assert listed == [r.run_id for r in runs if flt.matches(r)]
    assert all(len(page) == limit for page in pages[:-1] if page) or flt.narrows
    assert max(index.reads) <= BATCH_GET_MAX


def test_an_unfiltered_page_reads_only_what_it_returns() -> None:
    index = FakeIndex([Run(f"r{i:03d}") for i in range(50)])
    items, cursor = index.page(RunFilter("app_1", NOW_MS), 20, None)
    assert [r.run_id for r in items] == [f"r{i:03d}" for i in range(20)]
    assert index.reads == [20] and index.fetched == 20
    assert cursor == FakeIndex.cursor_of("r019")


def test_a_full_page_resumes_right_after_its_last_run() -> None:
    runs = [Run(f"r{i:03d}", status="failed" if i in (3, 5, 90) else "success") for i in range(120)]
    index = FakeIndex(runs)
    flt = RunFilter("app_1", NOW_MS, status="failed")
    items, cursor = index.page(flt, 2, None)
    assert [r.run_id for r in items] == ["r003", "r005"] and cursor == FakeIndex.cursor_of("r005")
    items, cursor = index.page(flt, 2, cursor)
    assert [r.run_id for r in items] == ["r090"] and cursor is None


def test_a_filter_matching_nothing_stops_after_the_key_budget() -> None:
    index = FakeIndex([Run(f"r{i:04d}") for i in range(2_000)])
    flt = RunFilter("app_1", NOW_MS, status="failed")
    items, cursor = index.page(flt, 20, None)
    assert items == [] and sum(index.reads) == MAX_KEYS_PER_PAGE
    assert cursor == FakeIndex.cursor_of(f"r{MAX_KEYS_PER_PAGE - 1:04d}")  # resumes after the last key
    pages = index.all_pages(flt, 20, max_keys=300)
    assert len(pages) == 7 and all(p == [] for p in pages)  # 2,000 keys, 300 a page


def test_a_small_key_budget_still_returns_every_match_once() -> None:
    runs = history(400, seed=3)
    flt = RunFilter("app_1", NOW_MS, source="schedule", status="pending")
    pages = FakeIndex(runs).all_pages(flt, 5, max_keys=30)
    assert [r.run_id for p in pages for r in p] == [r.run_id for r in runs if flt.matches(r)]


def test_runs_of_another_app_or_gone_are_never_listed() -> None:
    runs = [Run("a"), Run("b", app_id="app_2"), Run("c"), Run("d")]
    index = FakeIndex(runs)
    del index.items["c"]  # deleted (TTL) after the index was read
    items, cursor = index.page(RunFilter("app_1", NOW_MS), 10, None)
    assert [r.run_id for r in items] == ["a", "d"] and cursor is None


def test_an_empty_history() -> None:
    index = FakeIndex([])
    assert index.page(RunFilter("app_1", NOW_MS), 20, None) == ([], None)
    assert index.fetched == 0
