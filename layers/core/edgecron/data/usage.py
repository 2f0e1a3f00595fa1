"""Billable trigger counters per App and calendar month (UTC), updated with atomic ADDs.

An Event, and a direct run of an App with a quota or due later, is counted by the transaction that
stores it (`counted`). A direct run sent at its creation by an App without a quota is marked
`counted_by_check` and counted by the scan's check of recent runs, minutes later, with the
conditional move of the App's check mark past it (data/run_checks.py `mark_checked`). A run an
earlier release stored marked `uncounted` is counted by the worker that claims it (`batch`): one ADD
per App, month and kind before the first write that clears a mark, so a crash in between can count
it twice; no run is created so now.

A schedule fire is counted with the first write that creates its deliveries: the put of the run of
its first Endpoint (by that put's transaction, or, for an App without a quota whose run the check
of recent runs will still read, by the check, as a direct run sent at creation is), or the record of
a broadcast fire's first fan-out page (in that page's transaction). Each is one conditional write,
done once or not at all, so every count is exact whatever fails."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron.data.models import UsageModel

KINDS = ("schedule", "event", "direct")
Key = tuple[str, str, str]  # app_id, month, kind


def month_of(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m")


def add(app_id: str, month: str, kind: str, amount: int = 1) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown trigger kind {kind}")
    UsageModel(app_id=app_id, month=month).update(actions=[getattr(UsageModel, kind).add(amount)])


def counted(app_id: str, month: str, kind: str, amount: int = 1) -> tuple[UsageModel, list[Any]]:
    """The counter update that bills `amount` triggers, for a transaction with the write of the
    object it bills (so the count is exactly that write's: done once or not at all)."""
    if kind not in KINDS:
        raise ValueError(f"unknown trigger kind {kind}")
    return UsageModel(app_id=app_id, month=month), [getattr(UsageModel, kind).add(amount)]


def counted_kinds(app_id: str, month: str, kinds: dict[str, int]) -> tuple[UsageModel, list[Any]]:
    """`counted` for several kinds of one month at once: one update of the month's counters."""
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"unknown trigger kind {kind}")
    return UsageModel(app_id=app_id, month=month), [getattr(UsageModel, k).add(n) for k, n in kinds.items()]


def get(app_id: str, month: str) -> dict[str, int]:
    try:
        item = UsageModel.get(app_id, month)
    except DoesNotExist:
        return dict.fromkeys(KINDS, 0)
    return {kind: int(getattr(item, kind) or 0) for kind in KINDS}


class _Batch:
    """The marked runs one worker invocation has claimed and not yet counted (its records run in
    threads, so under a lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: dict[Key, set[str]] = {}
        self.counted: set[str] = set()


_BATCH: ContextVar[_Batch | None] = ContextVar("usage_batch", default=None)


@contextmanager
def batch() -> Iterator[None]:
    """Count the runs claimed while the block runs together. Nothing is flushed at the end: a run
    claimed but never concluded keeps its mark and is counted by whoever takes it over."""
    token = _BATCH.set(_Batch())
    try:
        yield
    finally:
        _BATCH.reset(token)


def claimed(run_id: str, key: Key) -> None:
    """A worker claimed a marked run: count it with the batch's next flush."""
    current = _BATCH.get()
    if current is not None:
        with current.lock:
            current.pending.setdefault(key, set()).add(run_id)


def count_before_clearing(run_id: str, key: Key) -> None:
    """Called before the write that clears a run's mark. In a batch: unless an earlier flush counted
    the run, flush every run the batch has claimed so far (one ADD per App, month and kind); outside
    one, add this run alone."""
    current = _BATCH.get()
    if current is None:
        add(*key)
        return
    with current.lock:  # the others wait for the ADDs: none clears a mark before its count landed
        if run_id in current.counted:
            return
        current.pending.setdefault(key, set()).add(run_id)
        todo, current.pending = current.pending, {}
        done: list[Key] = []
        try:
            for (app_id, month, kind), run_ids in todo.items():
                add(app_id, month, kind, len(run_ids))
                done.append((app_id, month, kind))
                current.counted |= run_ids
        except Exception:
            for left, run_ids in todo.items():  # not added: the next flush tries again
                if left not in done:
                    current.pending.setdefault(left, set()).update(run_ids)
            raise
