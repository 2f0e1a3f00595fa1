"""The overlap decision: what a fire time does when it comes due while the schedule's previous Fire
may still have open runs. Pure: the services read the schedule's turn (the Fire running under the
policy and the one buffered, if any) and apply the decision with conditional writes.

- ALLOW: every fire starts (nothing is read or written for it).
- SKIP: a fire due while the running Fire is open is SKIPPED.
- BUFFER_ONE: the first such fire waits (BUFFERED) and starts when the running Fire settles; any
  further one while a fire waits is SKIPPED. A buffered fire always starts before a later one."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from edgecron.domain.vocabulary import OverlapPolicy


class Admission(Enum):
    START = "start"  # take the turn and deliver now
    HAND_OVER = "hand_over"  # the running Fire settled and the buffered one never got the turn: it goes first
    BUFFER = "buffer"  # wait for the running Fire to settle
    SKIP = "skip"  # record SKIPPED, no runs


@dataclass(frozen=True)
class Turn:
    """What the schedule's turn says, as read: the fire time holding it (`running_at`) and whether
    that Fire is still open, and the fire time buffered behind it and whether it still waits."""

    running_at: int | None = None
    running_open: bool = False
    buffered_at: int | None = None
    buffered_waiting: bool = False


def admit(policy: OverlapPolicy, fire_at_ms: int, turn: Turn) -> Admission:
    """Whether the fire at `fire_at_ms`, now due, starts, waits or is skipped."""
    if policy == OverlapPolicy.ALLOW:
        return Admission.START
    if (
        turn.running_at is not None
        and turn.running_at != fire_at_ms
        and not turn.running_open
        and turn.buffered_waiting
        and turn.buffered_at != fire_at_ms
    ):
        return Admission.HAND_OVER  # a settle whose hand-over was cut short: never jump the queue
    if turn.running_at is None or turn.running_at == fire_at_ms or not turn.running_open:
        return Admission.START  # the turn is free, ours already, or held by a Fire that settled
    if turn.buffered_at == fire_at_ms:
        return Admission.BUFFER  # decided before (a retried decision finds its own place)
    if policy == OverlapPolicy.SKIP:
        return Admission.SKIP
    if turn.buffered_at is None or not turn.buffered_waiting:
        return Admission.BUFFER
    return Admission.SKIP


def next_to_start(turn: Turn) -> int | None:
    """Once the running Fire settled: the buffered fire time to start, if one still waits."""
    if turn.buffered_at is not None and turn.buffered_waiting:
        return turn.buffered_at
    return None
