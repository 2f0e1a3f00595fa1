"""Retry policy validation, backoff formulas and the Retry-After parser."""

from __future__ import annotations

import dataclasses
import random
from datetime import UTC, datetime, timedelta, timezone

import pytest

from edgecron.domain.retry import (
    DEFAULT_POLICY,
    MAX_DELAY_SEC,
    RETRY_AFTER_MAX_SEC,
    PolicyError,
    RetryPolicySpec,
    backoff_delay,
    clamp_delay,
    parse_retry_after,
    validate_policy,
)

ALMOST_ONE = 0.9999999999
NOW = datetime(2015, 10, 21, 7, 26, 0, tzinfo=UTC)  # two minutes before the RFC example date


def policy(
    strategy: str = "fixed",
    max_attempts: int = 5,
    base: int = 10,
    max_delay: int = 3600,
    jitter: bool = False,
) -> RetryPolicySpec:
    return RetryPolicySpec(strategy, max_attempts, base, max_delay, jitter)  # type: ignore[arg-type]


# --- the default policy -------------------------------------------------------------------


def test_default_policy_is_three_attempts_fixed_300s_without_jitter() -> None:
    assert RetryPolicySpec("fixed", 3, 300, 3600, False) == DEFAULT_POLICY
    assert validate_policy(DEFAULT_POLICY) is DEFAULT_POLICY
    assert [backoff_delay(DEFAULT_POLICY, n, 0.7) for n in (1, 2)] == [300.0, 300.0]


def test_policy_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_POLICY.max_attempts = 5  # type: ignore[misc]


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (policy(strategy="random"), "strategy"),
        (policy(max_attempts=0), "max_attempts"),
        (policy(max_attempts=21), "max_attempts"),
        (policy(max_attempts=True), "max_attempts"),  # a bool is not an attempt count
        (policy(max_attempts=2.5), "max_attempts"),  # type: ignore[arg-type]
        (policy(base=0), "base_delay_sec"),
        (policy(base=-5), "base_delay_sec"),
        (policy(base=86_401, max_delay=86_400), "base_delay_sec"),
        (policy(max_delay=0, base=1), "max_delay_sec"),
        (policy(max_delay=86_401), "max_delay_sec"),
        (policy(base=600, max_delay=300), "max_delay_sec"),
        (policy(jitter=1), "jitter"),  # type: ignore[arg-type]
    ],
)
def test_invalid_policies_name_the_field(spec: RetryPolicySpec, field: str) -> None:
    with pytest.raises(PolicyError) as info:
        validate_policy(spec)
    assert info.value.field == field
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(f"{field}: ")
    assert info.value.message


@pytest.mark.parametrize(
    "spec",
    [
        policy(max_attempts=1),
        policy(max_attempts=20),
        policy(base=1, max_delay=1),
        policy(base=86_400, max_delay=86_400),
        policy(strategy="linear", base=300, max_delay=300),
        policy(strategy="exponential", jitter=True),
    ],
)
def test_boundary_policies_are_valid(spec: RetryPolicySpec) -> None:
    assert validate_policy(spec) is spec


def test_backoff_rejects_an_invalid_policy() -> None:
    with pytest.raises(PolicyError) as info:
        backoff_delay(policy(max_attempts=0), 1, 0.0)
    assert info.value.field == "max_attempts"


@pytest.mark.parametrize("attempt", [0, -1])
def test_backoff_rejects_attempt_numbers_below_one(attempt: int) -> None:
    with pytest.raises(ValueError, match="attempt_number"):
        backoff_delay(policy(), attempt, 0.0)


@pytest.mark.parametrize("rand", [-0.1, 1.0, 1.5])
def test_backoff_rejects_rand_outside_unit_interval(rand: float) -> None:
    with pytest.raises(ValueError, match="rand"):
        backoff_delay(policy(jitter=True), 1, rand)


# --- formulas without jitter ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("fixed", [10.0, 10.0, 10.0, 10.0, 10.0]),
        ("linear", [10.0, 20.0, 30.0, 40.0, 50.0]),
        ("exponential", [10.0, 20.0, 40.0, 80.0, 160.0]),
    ],
)
def test_backoff_formulas_without_jitter(strategy: str, expected: list[float]) -> None:
    spec = policy(strategy=strategy, max_attempts=6, base=10, max_delay=3600)
    delays = [
        backoff_delay(spec, n, rand)
        for n, rand in zip(range(1, 6), (0.0, 0.5, ALMOST_ONE, 0.3, 0.9), strict=True)
    ]
    # rand is ignored when jitter is off
    assert delays == expected


@pytest.mark.parametrize(
    ("strategy", "attempt", "expected"),
    [
        ("linear", 4, 100.0),  # 30 * 4 = 120 -> 100
        ("exponential", 3, 100.0),  # 30 * 4 = 120 -> 100
        ("exponential", 2, 60.0),  # under the cap: untouched
        ("exponential", 19, 100.0),
    ],
)
def test_backoff_is_clamped_to_max_delay(strategy: str, attempt: int, expected: float) -> None:
    spec = policy(strategy=strategy, max_attempts=20, base=30, max_delay=100)
    assert backoff_delay(spec, attempt, 0.0) == expected


def test_exponential_with_huge_attempt_number_is_clamped_not_overflowing() -> None:
    spec = policy(strategy="exponential", max_attempts=20, base=1, max_delay=86_400)
    assert backoff_delay(spec, 10_000, 0.5) == 86_400.0


# --- formulas with equal jitter -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "attempt", "rand", "expected"),
    [
        # delay d, result = d/2 + rand * d/2
        ("fixed", 1, 0.0, 50.0),
        ("fixed", 1, 0.5, 75.0),
        ("fixed", 3, ALMOST_ONE, 100.0 * (0.5 + ALMOST_ONE / 2)),
        ("linear", 3, 0.0, 150.0),  # d = 300
        ("linear", 3, 0.5, 225.0),
        ("linear", 3, ALMOST_ONE, 300.0 * (0.5 + ALMOST_ONE / 2)),
        ("exponential", 4, 0.0, 400.0),  # d = 800
        ("exponential", 4, 0.5, 600.0),
        ("exponential", 4, ALMOST_ONE, 800.0 * (0.5 + ALMOST_ONE / 2)),
    ],
)
def test_backoff_formulas_with_equal_jitter(
    strategy: str, attempt: int, rand: float, expected: float
) -> None:
    spec = policy(strategy=strategy, max_attempts=10, base=100, max_delay=3600, jitter=True)
    assert backoff_delay(spec, attempt, rand) == pytest.approx(expected)


def test_jitter_never_fires_immediately_nor_exceeds_the_raw_delay() -> None:
    rng = random.Random(20251129)
    spec = policy(strategy="exponential", max_attempts=20, base=7, max_delay=1000, jitter=True)
    for _ in range(2000):
        attempt = rng.randint(1, 20)
        raw = min(7 * 2 ** (attempt - 1), 1000)
        delay = backoff_delay(spec, attempt, rng.random())
        assert raw / 2 <= delay <= raw


def test_jitter_applies_after_the_clamp_so_the_max_is_never_exceeded() -> None:
    spec = policy(strategy="exponential", max_attempts=20, base=60, max_delay=600, jitter=True)
    assert backoff_delay(spec, 10, 0.0) == 300.0
    assert 599.0 < backoff_delay(spec, 10, ALMOST_ONE) < 600.0


def test_one_second_floor_with_jitter() -> None:
    spec = policy(base=1, max_delay=1, jitter=True)
    # equal jitter of a 1 s delay would be 0.5 s: the floor lifts it to 1 s
    assert backoff_delay(spec, 1, 0.0) == 1.0
    assert backoff_delay(spec, 1, ALMOST_ONE) == 1.0


def test_one_second_floor_with_a_two_second_base() -> None:
    spec = policy(base=2, max_delay=2, jitter=True)
    assert backoff_delay(spec, 1, 0.0) == 1.0
    assert backoff_delay(spec, 1, 0.5) == 1.5


# --- the 1 s .. 24 h range --------------------------------------------------------------------


def test_one_second_delay() -> None:
    assert backoff_delay(policy(base=1, max_delay=1), 1, 0.0) == 1.0


def test_twenty_four_hour_fixed_delay() -> None:
    spec = policy(base=86_400, max_delay=86_400)
    assert backoff_delay(spec, 1, 0.0) == 86_400.0
    assert backoff_delay(spec, 19, 0.0) == float(MAX_DELAY_SEC)


def test_exponential_reaches_twenty_four_hours_and_stays() -> None:
    spec = policy(strategy="exponential", max_attempts=20, base=60, max_delay=86_400)
    delays = [backoff_delay(spec, n, 0.0) for n in range(1, 20)]
    assert delays[:4] == [60.0, 120.0, 240.0, 480.0]
    assert delays[11] == 86_400.0  # 60 * 2**11 = 122880 -> 24 h
    assert delays[-1] == 86_400.0
    assert delays == sorted(delays)


def test_twenty_four_hours_with_jitter_stays_between_twelve_and_twenty_four_hours() -> None:
    spec = policy(base=86_400, max_delay=86_400, jitter=True)
    assert backoff_delay(spec, 1, 0.0) == 43_200.0
    assert 86_399.0 < backoff_delay(spec, 1, ALMOST_ONE) < 86_400.0


def test_clamp_delay() -> None:
    spec = policy(base=10, max_delay=120)
    assert clamp_delay(0.0, spec) == 1.0
    assert clamp_delay(0.4, spec) == 1.0
    assert clamp_delay(60, spec) == 60.0
    assert clamp_delay(1e9, spec) == 120.0


# --- Retry-After ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0.0),
        ("1", 1.0),
        ("120", 120.0),
        ("86400", 86_400.0),
        ("  120\t", 120.0),
        ("0042", 42.0),
        ("2147483647", 2_147_483_647.0),  # not clamped to a policy here: the caller clamps
        ("99999999999", RETRY_AFTER_MAX_SEC),
    ],
)
def test_retry_after_delta_seconds(value: str, expected: float) -> None:
    assert parse_retry_after(value, NOW) == expected


@pytest.mark.parametrize(
    "value",
    [
        "Wed, 21 Oct 2015 07:28:00 GMT",  # IMF-fixdate
        "Wednesday, 21-Oct-15 07:28:00 GMT",  # obsolete RFC 850
        "Wed Oct 21 07:28:00 2015",  # obsolete asctime (no zone: UTC)
        " Wed, 21 Oct 2015 07:28:00 GMT ",
    ],
)
def test_retry_after_http_date_forms(value: str) -> None:
    assert parse_retry_after(value, NOW) == 120.0


def test_retry_after_asctime_with_space_padded_day() -> None:
    now = datetime(1994, 11, 6, 8, 49, 0, tzinfo=UTC)
    assert parse_retry_after("Sun Nov  6 08:49:37 1994", now) == 37.0
    assert parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now) == 37.0
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now) == 37.0


def test_retry_after_http_date_is_relative_to_now_with_subsecond_precision() -> None:
    now = NOW + timedelta(milliseconds=250)
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now) == 119.75


def test_retry_after_http_date_with_a_non_utc_now() -> None:
    now = NOW.astimezone(timezone(timedelta(hours=8)))
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now) == 120.0


def test_retry_after_naive_now_is_taken_as_utc() -> None:
    naive = NOW.replace(tzinfo=None)
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", naive) == 120.0


def test_retry_after_a_day_ahead() -> None:
    assert parse_retry_after("Thu, 22 Oct 2015 07:26:00 GMT", NOW) == 86_400.0


@pytest.mark.parametrize(
    "value",
    [
        "Wed, 21 Oct 2015 07:26:00 GMT",  # exactly now
        "Wed, 21 Oct 2015 07:00:00 GMT",  # 26 minutes ago
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ],
)
def test_retry_after_past_dates_mean_retry_now(value: str) -> None:
    assert parse_retry_after(value, NOW) == 0.0


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "   ",
        "soon",
        "-1",
        "+5",
        "1.5",
        "1e3",
        "0x10",
        "12 s",
        "١٢٠",  # Arabic-Indic digits are not RFC 9110 DIGITs
        "²",
        "Wed, 31 Feb 2015 07:28:00 GMT",  # no such day
        "Wed, 21 Oct 2015 25:28:00 GMT",  # no such hour
        "Wed, 21 Foo 2015 07:28:00 GMT",
        "tomorrow at noon",
    ],
)
def test_retry_after_invalid_values(value: str | None) -> None:
    assert parse_retry_after(value, NOW) is None


# A receiver controls Retry-After: the parser is total, whatever the value.


@pytest.mark.parametrize("digits", [11, 400, 5_000, 100_000])
def test_retry_after_with_huge_delta_seconds_is_the_largest_delay(digits: int) -> None:
    """Beyond 2**31 s a delta means "very long" (as RFC 9111 treats an overflowing delta); the
    policy's max_delay_sec then applies. A float of 400 digits overflows; int() refuses 4,300."""
    assert RETRY_AFTER_MAX_SEC == 2_147_483_648.0
    assert parse_retry_after("9" * digits, NOW) == RETRY_AFTER_MAX_SEC


@pytest.mark.parametrize(
    "value",
    ["Fri, 31 Dec 9999 23:59:59 GMT", "Fri Dec 31 23:59:59 9999", "Sat, 01 Jan 2090 00:00:00 GMT"],
)
def test_retry_after_far_future_dates_are_the_largest_delay_at_most(value: str) -> None:
    seconds = parse_retry_after(value, NOW)
    assert seconds is not None and 0.0 < seconds <= RETRY_AFTER_MAX_SEC


@pytest.mark.parametrize(
    "value",
    [
        "-" + "9" * 400,
        "9" * 400 + ".5",
        "Mon, 01 Jan 0001 00:00:00 +2359",
        "Wed, 21 Oct 2015 07:28:00 +9999",
        "Wed, 21 Oct 99999 07:28:00 GMT",
        "Wed, 21 Oct 2015 07:28:00 GMT\x00",
        "\x00",
        "120\r\n",
        "Wed, 21 Oct 2015 07:28:00 GMT, Wed, 21 Oct 2015 07:29:00 GMT",
        "1, 2",
        "日本",
        "x" * 100_000,
    ],
)
def test_retry_after_hostile_values_never_raise(value: str) -> None:
    seconds = parse_retry_after(value, NOW)
    assert seconds is None or 0.0 <= seconds <= RETRY_AFTER_MAX_SEC


@pytest.mark.parametrize("value", [b"120", 120, 1.5, ["120"]])
def test_retry_after_that_is_not_text_is_invalid(value: object) -> None:
    assert parse_retry_after(value, NOW) is None  # type: ignore[arg-type]


def test_retry_after_fuzzed_values_never_raise() -> None:
    pieces = ["Wed,", "21", "Oct", "2015", "07:28:00", "GMT", "+9999", "-0000", "9999", "0001", "Feb", "31"]
    pieces += ["99:99:99", "-1", "1e400", "UT", "Z", " ", ",", "\x00", "日本", "1" * 500, "+2359", "-2359"]
    rng = random.Random(7)
    for _ in range(5_000):
        value = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 7)))
        seconds = parse_retry_after(value, NOW)
        assert seconds is None or 0.0 <= seconds <= RETRY_AFTER_MAX_SEC, value
