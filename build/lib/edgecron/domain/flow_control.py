"""Flow control per Endpoint: at most `max_per_sec` deliveries a second and `max_in_flight` at once,
across every worker. Pure arithmetic; the shared state (one item per Endpoint) is data/flow_control.py.

Rate: a GCRA. The state is the theoretical arrival time `tat` of the next delivery; a delivery asking
at `now` is granted the slot `max(tat, now)` and moves `tat` to that slot + T, T = 1 / max_per_sec.
So granted slots are always at least T apart, whatever the workers' clocks say; an idle Endpoint
earns no credit (no burst after a quiet period: the first delivery goes at once, the next one T
later). A slot in the future is waited for: briefly in the worker, longer by re-sending the message
with the delay to its slot (the run keeps its slot, so a redelivery does not take a second one).

In flight: a lease per delivery, held from before the request until its result is recorded, and
expiring with the run's claim, so a worker that dies holding one blocks nothing past the claim."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

MIN_PER_SEC = 0.01  # one delivery every 100 s
MAX_PER_SEC = 10_000.0
# The lease item holds one entry per delivery in flight (~40 bytes): 100 keep it under 4 KB, so an
# acquire or a release stays a write of a few WRU at most.
MAX_IN_FLIGHT = 100
# A slot this close is waited for in the worker (SQS delays are whole seconds: re-sending a message
# for less would bring it straight back).
IN_PROCESS_WAIT_MS = 1_000
# A delivery that finds every lease taken tries again this much later (leases are held for one HTTP
# request, so one frees up soon).
LEASE_WAIT_MS = 1_000
US_PER_MS = 1_000


@dataclass(frozen=True)
class FlowLimits:
    """An Endpoint's limits; None for either means unlimited."""

    max_per_sec: float | None = None
    max_in_flight: int | None = None

    @property
    def interval_us(self) -> int | None:
        """T, the spacing between two slots, in microseconds (None: no rate limit)."""
        return None if self.max_per_sec is None else interval_us(self.max_per_sec)


def interval_us(max_per_sec: float) -> int:
    return max(1, math.ceil(1_000_000 / max_per_sec))


def is_continuation(tat_us: int | None, now_us: int) -> bool:
    """Whether a grant at `now_us` continues from the stored `tat` (tat >= now) rather than starting
    afresh at now (no tat yet, or an idle Endpoint whose tat is in the past)."""
    return tat_us is not None and tat_us >= now_us


def next_tat(tat_us: int | None, now_us: int, interval: int) -> int:
    """The stored `tat` after one more grant at `now_us`."""
    return (tat_us if is_continuation(tat_us, now_us) else now_us) + interval  # type: ignore[operator]


def granted_slot(new_tat_us: int, interval: int) -> int:
    """The slot a grant stands for, from the `tat` the grant stored."""
    return new_tat_us - interval


class Wait(StrEnum):
    NONE = "none"  # go now
    IN_WORKER = "in_worker"  # the slot is under IN_PROCESS_WAIT_MS away: wait for it here
    REQUEUE = "requeue"  # release the run and come back at the slot


def slot_wait(slot_ms: int, now_ms: int) -> Wait:
    """What a delivery granted `slot_ms` does at `now_ms`."""
    ahead = slot_ms - now_ms
    if ahead <= 0:
        return Wait.NONE
    return Wait.IN_WORKER if ahead < IN_PROCESS_WAIT_MS else Wait.REQUEUE


def slot_ms_of(slot_us: int) -> int:
    """A slot in milliseconds, rounded up: a delivery never goes before its slot."""
    return -(-slot_us // US_PER_MS)


def live_leases(leases: Mapping[str, int], now_ms: int) -> dict[str, int]:
    """The leases still held at `now_ms` (an expired one belonged to a worker that died)."""
    return {run_id: int(exp) for run_id, exp in leases.items() if int(exp) >= now_ms}


def expired_leases(leases: Mapping[str, int], now_ms: int) -> dict[str, int]:
    return {run_id: int(exp) for run_id, exp in leases.items() if int(exp) < now_ms}


def lease_free(leases: Mapping[str, int], run_id: str, max_in_flight: int, now_ms: int) -> bool:
    """Whether `run_id` may hold a lease: it already holds one (a redelivery), or fewer than
    `max_in_flight` live leases are held."""
    return run_id in leases or len(live_leases(leases, now_ms)) < max_in_flight
