"""A jittered fire's offset (range, determinism, spread) and the overlap decision, both pure."""

from __future__ import annotations

import pytest

from edgecron.domain import jitter
from edgecron.domain.overlap import Admission, Turn, admit, next_to_start
from edgecron.domain.vocabulary import OverlapPolicy

HOUR_MS = 3_600_000
T = 1_780_000_000_000  # a whole second


@pytest.mark.parametrize("jitter_sec", [1, 7, 60, 3600])
def test_the_offset_lies_in_zero_to_jitter_sec(jitter_sec: int) -> None:
    offsets = [jitter.offset_ms(f"sch_{i}", T + i * 60_000, jitter_sec) for i in range(500)]
    assert all(0 <= o < jitter_sec * 1000 for o in offsets)


def test_no_jitter_is_no_offset_and_the_fire_is_due_at_its_time() -> None:
    assert jitter.offset_ms("sch_a", T, 0) == 0
    assert jitter.due_at_ms("sch_a", T, 0, T - 70_000) == T


def test_the_offset_is_the_same_for_the_same_schedule_and_fire_time() -> None:
    first = jitter.offset_ms("sch_a", T, 600)
    assert all(jitter.offset_ms("sch_a", T, 600) == first for _ in range(10))
    assert jitter.due_at_ms("sch_a", T, 600, T - 70_000) == T + first


def test_many_schedules_on_the_same_hour_spread_over_the_window() -> None:
    offsets = [jitter.offset_ms(f"sch_{i:04d}", T, 3600) for i in range(2000)]
    buckets = [0] * 10  # ten 6-minute slices of the hour
    for o in offsets:
        buckets[o * 10 // HOUR_MS] += 1
    assert min(buckets) > 150 and max(buckets) < 250  # 200 each if even
    assert len(set(offsets)) > 1990


def test_one_schedule_spreads_its_own_fire_times_too() -> None:
    offsets = {jitter.offset_ms("sch_a", T + i * HOUR_MS, 60) for i in range(100)}
    assert len(offsets) > 90


def test_a_late_fire_whose_jittered_time_passed_is_due_at_once() -> None:
    offset = jitter.offset_ms("sch_a", T, 600)
    assert jitter.due_at_ms("sch_a", T, 600, T + offset + 5_000) == T + offset + 5_000
    assert jitter.due_at_ms("sch_a", T, 600, T + offset - 1) == T + offset


ALL = (OverlapPolicy.SKIP, OverlapPolicy.BUFFER_ONE)


def test_allow_always_starts() -> None:
    turn = Turn(running_at=T - 60_000, running_open=True, buffered_at=T - 30_000, buffered_waiting=True)
    assert admit(OverlapPolicy.ALLOW, T, turn) is Admission.START


@pytest.mark.parametrize("policy", ALL)
@pytest.mark.parametrize(
    "turn",
    [
        Turn(),  # nothing ran under the policy yet
        Turn(running_at=T - 60_000, running_open=False),  # the previous one settled
        Turn(running_at=T, running_open=True),  # a retried decision: the turn is this fire's
    ],
)
def test_a_free_or_own_turn_starts(policy: OverlapPolicy, turn: Turn) -> None:
    assert admit(policy, T, turn) is Admission.START


def test_skip_skips_while_the_previous_fire_is_open() -> None:
    assert admit(OverlapPolicy.SKIP, T, Turn(running_at=T - 60_000, running_open=True)) is Admission.SKIP


def test_buffer_one_buffers_the_first_and_skips_the_later_ones() -> None:
    open_turn = Turn(running_at=T - 60_000, running_open=True)
    assert admit(OverlapPolicy.BUFFER_ONE, T, open_turn) is Admission.BUFFER
    waiting = Turn(running_at=T - 60_000, running_open=True, buffered_at=T, buffered_waiting=True)
    assert admit(OverlapPolicy.BUFFER_ONE, T, waiting) is Admission.BUFFER  # its own place, retried
    assert admit(OverlapPolicy.BUFFER_ONE, T + 60_000, waiting) is Admission.SKIP


def test_buffer_one_takes_a_place_whose_fire_no_longer_waits() -> None:
    stale = Turn(running_at=T - 60_000, running_open=True, buffered_at=T - 30_000, buffered_waiting=False)
    assert admit(OverlapPolicy.BUFFER_ONE, T, stale) is Admission.BUFFER


def test_the_buffered_fire_is_next_only_while_it_waits() -> None:
    assert next_to_start(Turn(running_at=T, buffered_at=T + 1000, buffered_waiting=True)) == T + 1000
    assert next_to_start(Turn(running_at=T, buffered_at=T + 1000, buffered_waiting=False)) is None
    assert next_to_start(Turn(running_at=T)) is None


@pytest.mark.parametrize("policy", ALL)
def test_a_later_fire_never_jumps_a_buffered_one_whose_hand_over_was_cut_short(policy: OverlapPolicy) -> None:
    settled = Turn(running_at=T - 120_000, running_open=False, buffered_at=T - 60_000, buffered_waiting=True)
    assert admit(policy, T, settled) is Admission.HAND_OVER
    assert admit(policy, T - 60_000, settled) is Admission.START  # the buffered one takes the turn itself
