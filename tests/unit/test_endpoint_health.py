"""The health rules of an Endpoint: what counts as a failure, when both limits disable it, and when
a success needs a write at all."""

from __future__ import annotations

import pytest

from edgecron.domain.endpoint_health import (
    SUCCESS_RESOLUTION_MS,
    DisablePolicy,
    EndpointHealth,
    counts,
    should_disable,
    state,
    success_needs_write,
)
from edgecron.domain.vocabulary import DisabledReason, ErrorKind, HealthState

DAY_MS = 86_400_000


def test_states() -> None:
    assert state(EndpointHealth(), None) == HealthState.HEALTHY
    assert state(EndpointHealth(consecutive_failures=1, failing_since=5), None) == HealthState.FAILING
    assert state(EndpointHealth(consecutive_failures=7), DisabledReason.FAILING) == HealthState.DISABLED


@pytest.mark.parametrize(
    ("kind", "counted"),
    [
        (None, True),
        (ErrorKind.TIMEOUT, True),
        (ErrorKind.RECEIVER_STOPPED, True),
        (ErrorKind.POISON, True),
        (ErrorKind.ENDPOINT_DELETED, False),
        (ErrorKind.ENDPOINT_INACTIVE, False),
        (ErrorKind.ENDPOINT_DISABLED, False),
    ],
)
def test_a_failure_counts_unless_the_endpoints_own_state_stopped_the_run(
    kind: ErrorKind | None, counted: bool
) -> None:
    assert counts(True, kind) is counted
    assert counts(False, kind) is False


def test_both_limits_must_be_reached() -> None:
    policy = DisablePolicy(after_failures=100, after_sec=5 * 86_400)
    start = 1_000
    many_but_recent = EndpointHealth(consecutive_failures=500, failing_since=start)
    old_but_few = EndpointHealth(consecutive_failures=99, failing_since=start)
    assert not should_disable(many_but_recent, policy, start + 5 * DAY_MS - 1)
    assert should_disable(many_but_recent, policy, start + 5 * DAY_MS)
    assert not should_disable(old_but_few, policy, start + 30 * DAY_MS)


def test_zero_failures_means_never_and_zero_seconds_means_at_once() -> None:
    streak = EndpointHealth(consecutive_failures=10**6, failing_since=0)
    assert not should_disable(streak, DisablePolicy(after_failures=0, after_sec=0), 10**12)
    assert should_disable(EndpointHealth(2, 50), DisablePolicy(after_failures=2, after_sec=0), 50)


def test_a_success_on_a_healthy_endpoint_is_written_once_a_minute_at_most() -> None:
    fresh = EndpointHealth(last_success_at=10_000)
    assert not success_needs_write(fresh, 10_000 + SUCCESS_RESOLUTION_MS - 1)
    assert success_needs_write(fresh, 10_000 + SUCCESS_RESOLUTION_MS)
    assert success_needs_write(EndpointHealth(), 10_000)


def test_a_success_that_ends_a_streak_is_always_written() -> None:
    assert success_needs_write(EndpointHealth(1, 9_000, 9_999), 10_000)
