"""Billable trigger counters per App and calendar month (UTC), updated with atomic ADDs.

An Event, and a direct run of an App with a quota or due later, is counted by the transaction that
stores it (`counted`). A direct run sent at its creation by an App without a quota is marked
`counted_by_check` and counted by the scan's check of recent runs, minutes later, with the
conditional move of the App's check mark past it (data/run_checks.py `mark_checked`). A run an
earlier release stored marked `uncounted` is counted by the worker that claims it (`batch`): one ADD
per App, month and kind before the first write that clears a mark, so a crash in between can count
it twice; no run is created so now.

A scan tick bills the schedule fires it dispatches from reservations (`reserving`): triggers added
to the counter ahead of the Fires they pay for, each reservation one more than all before it (1, 2,
4, ...), what is left taken back when the tick ends. Every Fire is billed before it is written; a
tick that dies leaves its unspent reservation billed (too much, never too little)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron.data.models import UsageModel
from edgecron.observability import logger

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


class _Reservation:
    """Triggers a block has added to the counters ahead and not yet spent, per App, month and kind
    (`reserved`: all it added, which sizes the next reservation)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reserved: dict[Key, int] = {}
        self.unspent: dict[Key, int] = {}


_RESERVATION: ContextVar[_Reservation | None] = ContextVar("usage_reservation", default=None)


@contextmanager
def reserving() -> Iterator[None]:
    """Bill the triggers spent inside the block from reservations, n of them with about log2(n)
    ADDs; the unspent rest is taken back, one ADD per App, month and kind, when the block ends."""
    current = _Reservation()
    token = _RESERVATION.set(current)
    try:
        yield
    finally:
        _RESERVATION.reset(token)
        for key, left in current.unspent.items():
            if left:
                try:
                    add(*key, -left)
                except Exception:  # the reservation stays billed: too much, never too little
                    logger.warning(
                        "unspent usage reservation not taken back", extra={"kind": key[2], "left": left}
                    )


def spend(app_id: str, month: str, kind: str) -> None:
    """One trigger: from the current reservation, reserving more first if it is spent (outside a
    `reserving` block: an ADD of its own). The counter holds it before this returns."""
    current = _RESERVATION.get()
    if current is None:
        add(app_id, month, kind)
        return
    key = (app_id, month, kind)
    with current.lock:
        if not current.unspent.get(key):
            size = current.reserved.get(key, 0) + 1  # 1, 2, 4, 8, ...
            add(app_id, month, kind, size)
            current.reserved[key] = current.reserved.get(key, 0) + size
            current.unspent[key] = size
        current.unspent[key] -= 1


def give_back(app_id: str, month: str, kind: str) -> None:
    """Undo one `spend`: into the current reservation (taken back with the rest), else an ADD."""
    current = _RESERVATION.get()
    if current is None:
        add(app_id, month, kind, -1)
        return
    key = (app_id, month, kind)
    with current.lock:
        current.unspent[key] = current.unspent.get(key, 0) + 1


def unspent(app_id: str, month: str) -> dict[str, int]:
    """What the current reservation added to these counters and has not spent: the counter minus
    this is what was billed."""
    current = _RESERVATION.get()
    if current is None:
        return {}
    with current.lock:
        return {key[2]: left for key, left in current.unspent.items() if key[:2] == (app_id, month) and left}
