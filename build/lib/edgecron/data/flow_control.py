"""The shared flow-control state of an Endpoint (domain/flow_control.py): one item per Endpoint in the
Endpoints table, under its own partition, written only by conditional updates so every worker sees
the same rate and the same leases. An Endpoint without limits never reads or writes it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from pynamodb.expressions.condition import size

from edgecron import clock
from edgecron.data.conditional import update_if
from edgecron.data.models import FlowControlModel
from edgecron.domain.flow_control import (
    US_PER_MS,
    expired_leases,
    granted_slot,
    is_continuation,
    lease_free,
)

M = FlowControlModel
FLOW_PARTITION = "flow#"  # no App id contains "#", so this partition is never an App's
_GRANT_ROUNDS = 4  # each round is two writes; only a tat moved twice by others in between needs more

# The last tat this process saw per Endpoint: a hint that picks which of the two conditional writes
# to try first (tat only grows, so a hint at or after now is always right). A wrong guess costs one
# more write, never a wrong slot: the state itself is the shared item.
_tat_hints: dict[tuple[str, str], int] = {}


def _item(app_id: str, endpoint_id: str) -> FlowControlModel:
    return M(app_id=FLOW_PARTITION + app_id, endpoint_id=endpoint_id)


GATHER_GAP_SEC = 0.01  # a leader writes once no other request arrived for this long...
GATHER_MAX_SEC = 0.05  # ...or once it has gathered for this long


class _Together[Req, Res]:
    """Requests of one kind for one Endpoint in this process, written together. The deliveries of a
    worker batch ask at about the same time, a few milliseconds apart: the first one gathers the
    requests arriving until none came for GATHER_GAP_SEC (at most GATHER_MAX_SEC), writes for all of
    them and hands each its answer, so a batch of ten costs one or two writes instead of ten (and
    the rate's hint is never stale between them). A lone request waits GATHER_GAP_SEC. What is
    granted is still decided by the shared item's conditions."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.waiting: list[tuple[Req, Future[Res]]] = []
        self.busy = False

    def ask(self, request: Req, write: Callable[[list[Req]], list[Res]]) -> Res:
        mine: Future[Res] = Future()
        with self.lock:
            self.waiting.append((request, mine))
            leader = not self.busy
            self.busy = True
            self.lock.notify_all()
        if not leader:
            return mine.result()
        while True:  # the leader writes until nobody waits (a bounded batch of threads)
            with self.lock:
                self._gather()
                group, self.waiting = self.waiting, []
                if not group:
                    self.busy = False
                    break
            try:
                answers = write([request for request, _ in group])
            except BaseException as exc:  # each waiter fails with it; SQS delivers them again
                for _, waiter in group:
                    waiter.set_exception(exc)
                continue
            for (_, waiter), answer in zip(group, answers, strict=True):
                waiter.set_result(answer)
        return mine.result()

    def _gather(self) -> None:
        """Under the lock: let the requests arriving a few milliseconds apart join the group (real
        time: threads meeting, not the product's clock)."""
        give_up = time.monotonic() + GATHER_MAX_SEC
        while self.waiting:
            seen = len(self.waiting)
            left = give_up - time.monotonic()
            if left <= 0:
                return
            self.lock.wait(min(GATHER_GAP_SEC, left))
            if len(self.waiting) == seen:
                return


_together: dict[tuple[str, str, str], _Together[Any, Any]] = {}
_together_lock = threading.Lock()


def _group(kind: str, app_id: str, endpoint_id: str) -> _Together[Any, Any]:
    with _together_lock:
        return _together.setdefault((kind, app_id, endpoint_id), _Together())


def take_slot(app_id: str, endpoint_id: str, now_us: int, interval_us: int) -> int:
    """Grant the next rate slot (microseconds): `max(tat, now)`, moving tat one interval on per slot
    granted, in one conditional update for all the requests of this process waiting for it."""

    def write(asks: list[int]) -> list[int]:
        first = _grant(app_id, endpoint_id, max(*asks, _now_us()), interval_us, len(asks))
        return [first + i * interval_us for i in range(len(asks))]

    slot: int = _group("slot", app_id, endpoint_id).ask(now_us, write)
    return slot


def _now_us() -> int:
    return clock.to_ms(clock.now()) * US_PER_MS


def _grant(app_id: str, endpoint_id: str, now_us: int, interval_us: int, count: int) -> int:
    """`count` consecutive slots in one conditional update (two variants: continue from tat, or
    start afresh at now); the first of them."""
    key = (app_id, endpoint_id)
    continuation = is_continuation(_tat_hints.get(key), now_us)
    span = interval_us * count
    for _ in range(_GRANT_ROUNDS):
        for variant in (continuation, not continuation):
            item = _item(app_id, endpoint_id)
            if variant:
                granted = update_if(item, [M.tat.set(M.tat + span)], M.tat >= now_us)
            else:
                granted = update_if(
                    item, [M.tat.set(now_us + span)], M.tat.does_not_exist() | (M.tat < now_us)
                )
            if granted:
                tat = int(item.tat)
                _tat_hints[key] = tat
                return granted_slot(tat, span)
    raise RuntimeError(f"no rate slot granted for {endpoint_id}: its state kept changing")


def acquire_lease(
    app_id: str, endpoint_id: str, run_id: str, expires_at_ms: int, max_in_flight: int, now_ms: int
) -> bool:
    """Hold one of the Endpoint's `max_in_flight` leases for `run_id` until `expires_at_ms` (a run
    that already holds one keeps it). Requests of this process waiting together take their leases in
    one update when there is room for all of them; otherwise each tries alone. When none is free,
    the leases of workers that died (expired) are pruned and the acquire is tried once more; False:
    every lease is held."""

    def write(asks: list[tuple[str, int]]) -> list[bool]:
        if len(asks) > 1 and _try_acquire_all(app_id, endpoint_id, asks, max_in_flight):
            return [True] * len(asks)
        return [_acquire_one(app_id, endpoint_id, r, e, max_in_flight, now_ms) for r, e in asks]

    held: bool = _group("acquire", app_id, endpoint_id).ask((run_id, expires_at_ms), write)
    return held


def _try_acquire_all(app_id: str, endpoint_id: str, asks: list[tuple[str, int]], max_in_flight: int) -> bool:
    room = M.leases.exists() & (size(M.leases) <= max_in_flight - len(asks))
    actions = [M.leases[run_id].set(expires_at_ms) for run_id, expires_at_ms in asks]
    return update_if(_item(app_id, endpoint_id), actions, room)


def _acquire_one(
    app_id: str, endpoint_id: str, run_id: str, expires_at_ms: int, max_in_flight: int, now_ms: int
) -> bool:
    if _try_acquire(app_id, endpoint_id, run_id, expires_at_ms, max_in_flight):
        return True
    current = _read(app_id, endpoint_id)
    leases = _leases_of(current)
    if current is None or current.leases is None:  # the Endpoint's first lease: make its map
        update_if(_item(app_id, endpoint_id), [M.leases.set(M.leases | {})], M.leases.does_not_exist())
    else:
        stale = expired_leases(leases, now_ms)
        if not stale:
            # full, or a lease was given back (or the map made) since the try: try again only then
            return (
                _try_acquire(app_id, endpoint_id, run_id, expires_at_ms, max_in_flight)
                if lease_free(leases, run_id, max_in_flight, now_ms)
                else False
            )
        still_stale: Any = None
        for stale_id, expiry in stale.items():
            same = M.leases[stale_id] == expiry
            still_stale = same if still_stale is None else still_stale & same
        update_if(_item(app_id, endpoint_id), [M.leases[r].remove() for r in stale], still_stale)
    return _try_acquire(app_id, endpoint_id, run_id, expires_at_ms, max_in_flight)


def _try_acquire(app_id: str, endpoint_id: str, run_id: str, expires_at_ms: int, max_in_flight: int) -> bool:
    free = M.leases.exists() & (size(M.leases) < max_in_flight)
    held_or_free = M.leases[run_id].exists() | free
    return update_if(_item(app_id, endpoint_id), [M.leases[run_id].set(expires_at_ms)], held_or_free)


def release_lease(app_id: str, endpoint_id: str, run_id: str) -> bool:
    """Give the lease back once the delivery's result is recorded, in one update with the releases of
    this process waiting together (False: the Endpoint and its state were deleted meanwhile)."""

    def write(run_ids: list[str]) -> list[bool]:
        item = _item(app_id, endpoint_id)
        done = update_if(item, [M.leases[r].remove() for r in dict.fromkeys(run_ids)], M.leases.exists())
        return [done] * len(run_ids)

    released: bool = _group("release", app_id, endpoint_id).ask(run_id, write)
    return released


def _read(app_id: str, endpoint_id: str) -> FlowControlModel | None:
    try:
        return M.get(FLOW_PARTITION + app_id, endpoint_id, consistent_read=True)
    except M.DoesNotExist:
        return None


def _leases_of(row: FlowControlModel | None) -> dict[str, int]:
    if row is None or row.leases is None:
        return {}
    return {str(k): int(v) for k, v in row.leases.as_dict().items()}


def leases(app_id: str, endpoint_id: str) -> dict[str, int]:
    """The leases on record (expired ones included), for tests and operators."""
    return _leases_of(_read(app_id, endpoint_id))


def delete(app_id: str, endpoint_id: str) -> None:
    """The Endpoint is gone: so is its flow-control state."""
    _item(app_id, endpoint_id).delete()
