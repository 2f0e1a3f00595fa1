"""Flow control arithmetic: the GCRA's slots (bursts, idle periods, workers whose clocks disagree),
what a granted slot means for the delivery, and the lease decision."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from edgecron.domain.endpoints import Endpoint
from edgecron.domain.flow_control import (
    IN_PROCESS_WAIT_MS,
    FlowLimits,
    Wait,
    expired_leases,
    granted_slot,
    interval_us,
    lease_free,
    live_leases,
    next_tat,
    slot_ms_of,
    slot_wait,
)

SEC = 1_000_000  # µs


def grant(tat: int | None, now: int, t: int) -> tuple[int, int]:
    """One grant as the shared item does it: (the slot, the stored tat afterwards)."""
    new = next_tat(tat, now, t)
    return granted_slot(new, t), new


def grants(nows: list[int], t: int, tat: int | None = None) -> list[int]:
    slots = []
    for now in nows:
        slot, tat = grant(tat, now, t)
        slots.append(slot)
    return slots


def test_the_interval_is_one_over_the_rate_in_microseconds() -> None:
    assert interval_us(1) == SEC
    assert interval_us(4) == 250_000
    assert interval_us(3) == 333_334  # rounded up: never faster than the rate
    assert interval_us(0.5) == 2 * SEC
    assert FlowLimits(max_per_sec=10).interval_us == 100_000
    assert FlowLimits(max_in_flight=3).interval_us is None


def test_a_burst_is_spread_one_interval_apart() -> None:
    # ten deliveries asking at the same instant at 5 a second: 0, 200 ms, ... 1.8 s
    assert grants([10 * SEC] * 10, interval_us(5)) == [10 * SEC + i * 200_000 for i in range(10)]


def test_an_idle_endpoint_earns_no_burst() -> None:
    t = interval_us(2)
    tat = None
    first = []
    for _ in range(3):
        slot, tat = grant(tat, 0, t)
        first.append(slot)
    assert first == [0, 500_000, 1_000_000]
    # a minute of silence, then three at once: the first goes now, the others one interval apart
    assert grants([60 * SEC] * 3, t, tat=tat) == [60 * SEC, 60 * SEC + t, 60 * SEC + 2 * t]


def test_traffic_under_the_rate_is_never_delayed() -> None:
    t = interval_us(10)
    nows = [i * 150_000 for i in range(20)]  # every 150 ms, the limit allows one per 100 ms
    assert grants(nows, t) == nows


def test_a_worker_whose_clock_lags_gets_the_next_slot_not_an_earlier_one() -> None:
    t = interval_us(1)
    slot_a, tat = grant(None, 100 * SEC, t)  # worker A's clock
    slot_b, tat = grant(tat, 97 * SEC, t)  # worker B is 3 s behind
    slot_c, _ = grant(tat, 100 * SEC, t)
    assert [slot_a, slot_b, slot_c] == [100 * SEC, 101 * SEC, 102 * SEC]


def test_a_worker_whose_clock_runs_ahead_only_delays_the_others() -> None:
    t = interval_us(1)
    slot_a, tat = grant(None, 100 * SEC, t)
    slot_b, tat = grant(tat, 105 * SEC, t)  # 5 s ahead: tat is behind its now, so it starts afresh
    slot_c, _ = grant(tat, 100 * SEC, t)  # back on time: waits behind the ahead worker's slot
    assert [slot_a, slot_b, slot_c] == [100 * SEC, 105 * SEC, 106 * SEC]


@given(
    rate=st.floats(min_value=0.01, max_value=10_000, allow_nan=False),
    nows=st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=60),
)
def test_granted_slots_are_at_least_an_interval_apart_whatever_the_clocks_say(
    rate: float, nows: list[int]
) -> None:
    t = interval_us(rate)
    slots = grants(nows, t)
    assert all(b - a >= t for a, b in itertools.pairwise(slots))
    assert all(slot >= now for slot, now in zip(slots, nows, strict=True))  # never before its ask


@given(
    rate=st.integers(min_value=1, max_value=50),
    nows=st.lists(st.integers(min_value=0, max_value=5 * SEC), min_size=1, max_size=200),
)
def test_no_second_window_holds_more_slots_than_the_rate(rate: int, nows: list[int]) -> None:
    slots = grants(sorted(nows), interval_us(rate))
    for start in slots:
        assert sum(start <= s < start + SEC for s in slots) <= rate


def test_what_a_granted_slot_means_for_the_delivery() -> None:
    assert slot_wait(1_000, 1_000) == Wait.NONE
    assert slot_wait(900, 1_000) == Wait.NONE
    assert slot_wait(1_001, 1_000) == Wait.IN_WORKER
    assert slot_wait(1_000 + IN_PROCESS_WAIT_MS - 1, 1_000) == Wait.IN_WORKER
    # a whole second or more: the message comes back (SQS delays are whole seconds)
    assert slot_wait(1_000 + IN_PROCESS_WAIT_MS, 1_000) == Wait.REQUEUE
    assert slot_wait(10**9, 1_000) == Wait.REQUEUE


def test_a_slot_in_milliseconds_is_never_before_the_slot() -> None:
    assert slot_ms_of(5_000_000) == 5_000
    assert slot_ms_of(5_000_001) == 5_001
    assert slot_ms_of(4_999_999) == 5_000


def test_a_lease_is_free_below_the_limit_and_for_a_run_that_holds_one() -> None:
    held = {"run_a": 2_000, "run_b": 2_000}
    assert lease_free(held, "run_c", 3, now_ms=1_000)
    assert not lease_free(held, "run_c", 2, now_ms=1_000)
    assert lease_free(held, "run_a", 2, now_ms=1_000)  # a redelivery keeps its own


def test_expired_leases_belong_to_workers_that_died() -> None:
    held = {"run_a": 999, "run_b": 1_000, "run_c": 5_000}
    assert live_leases(held, 1_000) == {"run_b": 1_000, "run_c": 5_000}
    assert expired_leases(held, 1_000) == {"run_a": 999}
    assert lease_free(held, "run_d", 3, now_ms=1_000)  # the dead worker's lease does not count


def _endpoint(**limits: object) -> Endpoint:
    return Endpoint(app_id="app_1", endpoint_id="ep_1", url="https://x", created_at=0, updated_at=0, **limits)  # type: ignore[arg-type]


def test_an_endpoint_without_limits_has_no_flow_control() -> None:
    assert _endpoint().flow_limits is None
    assert _endpoint(max_per_sec=2.5).flow_limits == FlowLimits(2.5, None)
    assert _endpoint(max_in_flight=4).flow_limits == FlowLimits(None, 4)


def test_a_schedule_run_flow_control_holds_back_is_late_by_design_not_a_lost_message() -> None:
    from edgecron.data.models import TaskRunModel
    from edgecron.services.fires.due_walk import is_late_first_delivery

    def run(**extra: object) -> TaskRunModel:
        return TaskRunModel(
            app_id="app_1",
            run_id="run_1",
            source="schedule",
            status="pending",
            total_attempts=0,
            fire_at=0,
            **extra,
        )

    an_hour_later = 3_600_000
    assert is_late_first_delivery(run(), an_hour_later)  # its message was lost
    assert not is_late_first_delivery(run(flow_held=True), an_hour_later)  # waiting for its slot
