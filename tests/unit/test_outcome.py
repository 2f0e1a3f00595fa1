"""The decision table for one Delivery Attempt, and response summaries."""

from __future__ import annotations

import dataclasses
import random
from datetime import UTC, datetime, timedelta

import pytest

from edgecron.domain.outcome import (
    AttemptResult,
    Decision,
    decide,
    truncate_summary,
)
from edgecron.domain.retry import DEFAULT_POLICY, PolicyError, RetryPolicySpec

NOW = datetime(2025, 3, 9, 12, 0, 0, tzinfo=UTC)
IN_FIVE_MINUTES = "Sun, 09 Mar 2025 12:05:00 GMT"
# exponential 10 s, so the table can tell the backoff delay (10 s after attempt 1)
# from the Retry-After delay and from a fixed default
POLICY = RetryPolicySpec("exponential", 3, 10, 600, False)


def http(status: int, retry_after: str | None = None) -> AttemptResult:
    return AttemptResult(status_code=status, error=None, error_kind=None, retry_after=retry_after)


TIMEOUT = AttemptResult(None, "timeout", "timeout", None)
NETWORK = AttemptResult(None, "connection_error: connection refused", "network", None)
INACTIVE = AttemptResult(None, None, "endpoint_inactive", None)
DELETED = AttemptResult(None, None, "endpoint_deleted", None)
REFUSED = AttemptResult(None, "ssrf_refused: 10.0.0.7 is private", "refused", None)
REDIRECT = AttemptResult(None, "redirect_not_followed", "redirect", None)
INVALID_REQUEST = AttemptResult(
    None, "invalid_header: value of header X-Team must be ASCII", "invalid_request"
)
INVALID_RESPONSE = AttemptResult(None, "bad status line", "invalid_response")

# (id, result, outcome on attempt 1 of 3, delay on attempt 1 of 3, reason)
# A "retry" on attempt 1 of 3 becomes "dead_letter" on attempt 3 of 3 with the reason
# "attempts exhausted (3 of 3): <reason>"; every other outcome is the same on both attempts.
TABLE: list[tuple[str, AttemptResult, str, float | None, str]] = [
    ("200", http(200), "success", None, "HTTP 200"),
    ("201", http(201), "success", None, "HTTP 201"),
    ("204", http(204), "success", None, "HTTP 204"),
    ("299", http(299), "success", None, "HTTP 299"),
    ("301", http(301), "failed", None, "HTTP 301: redirects are not followed"),
    ("302", http(302), "failed", None, "HTTP 302: redirects are not followed"),
    ("redirect-kind", REDIRECT, "failed", None, "redirect not followed"),
    ("400", http(400), "failed", None, "HTTP 400"),
    ("401", http(401), "failed", None, "HTTP 401"),
    ("404", http(404), "failed", None, "HTTP 404"),
    ("409", http(409), "failed", None, "HTTP 409"),
    ("410", http(410), "failed", None, "HTTP 410"),
    ("429+seconds", http(429, "120"), "retry", 120.0, "HTTP 429 (Retry-After: 120)"),
    (
        "429+date",
        http(429, IN_FIVE_MINUTES),
        "retry",
        300.0,
        f"HTTP 429 (Retry-After: {IN_FIVE_MINUTES})",
    ),
    ("429-missing", http(429), "failed", None, "HTTP 429 without a valid Retry-After"),
    ("429-garbage", http(429, "soon"), "failed", None, "HTTP 429 without a valid Retry-After"),
    ("429-fraction", http(429, "1.5"), "failed", None, "HTTP 429 without a valid Retry-After"),
    ("500", http(500), "retry", 10.0, "HTTP 500"),
    ("502", http(502), "retry", 10.0, "HTTP 502"),
    ("503", http(503), "retry", 10.0, "HTTP 503"),
    ("timeout", TIMEOUT, "retry", 10.0, "timeout"),
    ("network", NETWORK, "retry", 10.0, "network error: connection_error: connection refused"),
    ("inactive", INACTIVE, "failed", None, "endpoint inactive"),
    ("deleted", DELETED, "failed", None, "endpoint deleted"),
    ("refused", REFUSED, "failed", None, "target refused: ssrf_refused: 10.0.0.7 is private"),
    (
        "invalid-request",
        INVALID_REQUEST,
        "failed",
        None,
        "request not sent: invalid_header: value of header X-Team must be ASCII",
    ),
    ("invalid-response", INVALID_RESPONSE, "retry", 10.0, "invalid response: bad status line"),
]
IDS = [row[0] for row in TABLE]


@pytest.mark.parametrize(("_id", "result", "outcome", "delay", "reason"), TABLE, ids=IDS)
def test_decision_table_attempt_1_of_3(
    _id: str, result: AttemptResult, outcome: str, delay: float | None, reason: str
) -> None:
    assert decide(result, 1, POLICY, NOW, 0.5) == Decision(outcome, delay, reason)  # type: ignore[arg-type]


@pytest.mark.parametrize(("_id", "result", "outcome", "delay", "reason"), TABLE, ids=IDS)
def test_decision_table_attempt_3_of_3(
    _id: str, result: AttemptResult, outcome: str, delay: float | None, reason: str
) -> None:
    expected = (
        Decision("dead_letter", None, f"attempts exhausted (3 of 3): {reason}")
        if outcome == "retry"
        else Decision(outcome, None, reason)  # type: ignore[arg-type]
    )
    assert decide(result, 3, POLICY, NOW, 0.5) == expected


# --- retries and exhaustion ----------------------------------------------------------------


def test_attempt_2_of_3_uses_the_backoff_for_attempt_2() -> None:
    assert decide(http(503), 2, POLICY, NOW, 0.0) == Decision("retry", 20.0, "HTTP 503")


def test_default_policy_retries_after_300s_then_dead_letters_on_attempt_3() -> None:
    assert decide(http(500), 1, DEFAULT_POLICY, NOW, 0.9) == Decision("retry", 300.0, "HTTP 500")
    assert decide(http(500), 2, DEFAULT_POLICY, NOW, 0.9) == Decision("retry", 300.0, "HTTP 500")
    assert decide(http(500), 3, DEFAULT_POLICY, NOW, 0.9).outcome == "dead_letter"


def test_single_attempt_policy_dead_letters_the_first_retryable_failure() -> None:
    spec = RetryPolicySpec("fixed", 1, 60, 60, False)
    assert decide(TIMEOUT, 1, spec, NOW, 0.0) == Decision(
        "dead_letter", None, "attempts exhausted (1 of 1): timeout"
    )


def test_attempt_beyond_a_lowered_max_attempts_is_dead_letter() -> None:
    # the policy was edited from 10 to 3 attempts while the run was waiting for attempt 5
    assert decide(http(502), 5, POLICY, NOW, 0.0) == Decision(
        "dead_letter", None, "attempts exhausted (5 of 3): HTTP 502"
    )


def test_success_on_the_last_attempt_is_success() -> None:
    assert decide(http(200), 3, POLICY, NOW, 0.0) == Decision("success", None, "HTTP 200")


def test_retry_delay_is_jittered_when_the_policy_says_so() -> None:
    spec = RetryPolicySpec("fixed", 3, 100, 100, True)
    assert decide(http(503), 1, spec, NOW, 0.0).delay_sec == 50.0
    assert decide(http(503), 1, spec, NOW, 0.5).delay_sec == 75.0


# --- 429 and Retry-After ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("retry_after", "delay"),
    [
        ("0", 1.0),  # retry "now" still waits the 1 s floor
        ("1", 1.0),
        ("599", 599.0),
        ("600", 600.0),
        ("86400", 600.0),  # clamped to max_delay_sec
        ("Sun, 09 Mar 2025 11:00:00 GMT", 1.0),  # a past date means now -> 1 s floor
        ("Mon, 10 Mar 2025 12:00:00 GMT", 600.0),  # a day ahead -> clamped
    ],
)
def test_429_retry_after_is_clamped_to_the_policy(retry_after: str, delay: float) -> None:
    decision = decide(http(429, retry_after), 1, POLICY, NOW, 0.5)
    assert decision.outcome == "retry"
    assert decision.delay_sec == delay


def test_429_with_a_huge_retry_after_waits_the_policy_maximum() -> None:
    """A receiver's 400-digit Retry-After is a valid, very long wait: clamped, and quoted short."""
    decision = decide(http(429, "9" * 400), 1, POLICY, NOW, 0.5)
    assert decision.outcome == "retry" and decision.delay_sec == 600.0
    assert decision.reason.startswith("HTTP 429 (Retry-After: 999") and len(decision.reason) < 100
    exhausted = decide(http(429, "9" * 400), 3, POLICY, NOW, 0.5)
    assert exhausted.outcome == "dead_letter" and len(exhausted.reason) < 150


@pytest.mark.parametrize(
    "retry_after", ["-5", "1.5", "soon", "\x00", "Wed, 21 Oct 2015 07:28:00 +9999", "日本"]
)
def test_429_with_a_negative_fractional_or_garbage_retry_after_is_terminal(retry_after: str) -> None:
    assert decide(http(429, retry_after), 1, POLICY, NOW, 0.5) == Decision(
        "failed", None, "HTTP 429 without a valid Retry-After"
    )


def test_429_with_a_far_future_date_waits_the_policy_maximum() -> None:
    assert decide(http(429, "Fri, 31 Dec 9999 23:59:59 GMT"), 1, POLICY, NOW, 0.5).delay_sec == 600.0


def test_429_retry_after_is_not_jittered() -> None:
    spec = RetryPolicySpec("fixed", 3, 10, 3600, True)
    assert decide(http(429, "120"), 1, spec, NOW, 0.0).delay_sec == 120.0
    assert decide(http(429, "120"), 1, spec, NOW, 0.99).delay_sec == 120.0


def test_429_date_is_relative_to_now() -> None:
    later = NOW + timedelta(minutes=4)
    assert decide(http(429, IN_FIVE_MINUTES), 1, POLICY, later, 0.5).delay_sec == 60.0


def test_retry_after_on_a_503_is_ignored_and_backoff_applies() -> None:
    assert decide(http(503, "120"), 1, POLICY, NOW, 0.5) == Decision("retry", 10.0, "HTTP 503")


# --- precedence and odd inputs -----------------------------------------------------------------


def test_timeout_wins_over_a_status_code() -> None:
    # headers said 200 but reading the body timed out: not a clean success
    result = AttemptResult(200, "timeout", "timeout", None)
    assert decide(result, 1, POLICY, NOW, 0.0) == Decision("retry", 10.0, "timeout")


def test_redirect_kind_with_a_status_reports_the_status() -> None:
    result = AttemptResult(302, "redirect_not_followed", "redirect", None)
    assert decide(result, 1, POLICY, NOW, 0.0) == Decision(
        "failed", None, "HTTP 302: redirects are not followed"
    )


def test_http_kinds_are_descriptive_and_the_status_decides() -> None:
    assert decide(AttemptResult(503, None, "http_5xx", None), 1, POLICY, NOW, 0.0) == Decision(
        "retry", 10.0, "HTTP 503"
    )
    assert decide(AttemptResult(404, None, "http_4xx", None), 1, POLICY, NOW, 0.0) == Decision(
        "failed", None, "HTTP 404"
    )
    assert decide(AttemptResult(429, None, "http_429", "5"), 1, POLICY, NOW, 0.0) == Decision(
        "retry", 5.0, "HTTP 429 (Retry-After: 5)"
    )


def test_inactive_endpoint_is_terminal_even_with_a_status() -> None:
    result = AttemptResult(503, None, "endpoint_inactive", None)
    assert decide(result, 1, POLICY, NOW, 0.0) == Decision("failed", None, "endpoint inactive")


def test_refused_without_detail() -> None:
    result = AttemptResult(None, None, "refused", None)
    assert decide(result, 1, POLICY, NOW, 0.0) == Decision("failed", None, "target refused")


@pytest.mark.parametrize("status", [100, 199, 600, 999])
def test_unexpected_status_codes_are_terminal(status: int) -> None:
    assert decide(http(status), 1, POLICY, NOW, 0.0) == Decision(
        "failed", None, f"unexpected HTTP status {status}"
    )


def test_an_error_without_kind_or_status_is_retried_like_a_network_error() -> None:
    result = AttemptResult(None, "RuntimeError: boom", None, None)
    assert decide(result, 1, POLICY, NOW, 0.0) == Decision("retry", 10.0, "error: RuntimeError: boom")


def test_optional_fields_default_to_none() -> None:
    assert AttemptResult(200) == AttemptResult(200, None, None, None)


def test_an_empty_result_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="status_code"):
        decide(AttemptResult(None), 1, POLICY, NOW, 0.0)


@pytest.mark.parametrize("attempt", [0, -3])
def test_decide_rejects_attempt_numbers_below_one(attempt: int) -> None:
    with pytest.raises(ValueError, match="attempt_number"):
        decide(http(503), attempt, POLICY, NOW, 0.0)


@pytest.mark.parametrize("rand", [-0.01, 1.0])
def test_decide_rejects_rand_outside_unit_interval(rand: float) -> None:
    with pytest.raises(ValueError, match="rand"):
        decide(http(503), 1, POLICY, NOW, rand)


def test_decide_rejects_an_invalid_policy() -> None:
    with pytest.raises(PolicyError) as info:
        decide(http(200), 1, RetryPolicySpec("fixed", 3, 600, 300, False), NOW, 0.0)
    assert info.value.field == "max_delay_sec"


def test_results_and_decisions_are_immutable() -> None:
    decision = decide(http(200), 1, POLICY, NOW, 0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.outcome = "failed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        http(200).status_code = 500  # type: ignore[misc]


# --- truncate_summary ------------------------------------------------------------------------


def _reference_truncate(body: bytes, limit: int) -> str:
    """The obvious implementation: decode everything, then cut."""
    text = body.decode("utf-8", errors="replace")
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[: limit - 3].decode("utf-8", errors="ignore") + "…"


def test_short_bodies_are_unchanged() -> None:
    assert truncate_summary(b"") == ""
    assert truncate_summary(b'{"ok": true}') == '{"ok": true}'
    assert truncate_summary("héllo wörld ✓".encode()) == "héllo wörld ✓"


def test_a_body_of_exactly_the_limit_is_unchanged() -> None:
    body = b"a" * 1024
    assert truncate_summary(body) == "a" * 1024


def test_one_byte_over_the_limit_is_truncated_with_the_marker_inside_the_limit() -> None:
    summary = truncate_summary(b"a" * 1025)
    assert summary == "a" * 1021 + "…"
    assert len(summary.encode("utf-8")) == 1024


def test_custom_limit() -> None:
    assert truncate_summary(b"abcdefghij", limit=8) == "abcde…"
    assert truncate_summary(b"abcdefgh", limit=8) == "abcdefgh"


def test_smallest_limit_is_the_marker() -> None:
    assert truncate_summary(b"abcd", limit=3) == "…"
    assert truncate_summary(b"abc", limit=3) == "abc"
    with pytest.raises(ValueError, match="limit"):
        truncate_summary(b"abcd", limit=2)


def test_two_byte_characters_are_not_split() -> None:
    summary = truncate_summary("é".encode() * 600)  # 1200 bytes
    # 1021 bytes available before the marker: 510 whole "é" (1020 bytes)
    assert summary == "é" * 510 + "…"
    assert len(summary.encode("utf-8")) == 1023


def test_four_byte_characters_are_not_split() -> None:
    summary = truncate_summary("😀".encode() * 10, limit=20)  # 40 bytes
    assert summary == "😀" * 4 + "…"  # 16 + 3 bytes: a fifth emoji would need 23


def test_invalid_utf8_is_replaced() -> None:
    assert truncate_summary(b"ok \xff\xfe done") == "ok \ufffd\ufffd done"


def test_replacement_characters_count_toward_the_limit() -> None:
    # 400 invalid bytes decode to 400 U+FFFD = 1200 bytes of UTF-8
    summary = truncate_summary(b"\xff" * 400)
    assert summary == "\ufffd" * 340 + "…"
    assert len(summary.encode("utf-8")) <= 1024


def test_a_huge_body_is_truncated_from_its_start() -> None:
    body = b"x" * 5 + "中".encode() * 5_000_000  # about 15 MB
    summary = truncate_summary(body, limit=32)
    assert summary == "xxxxx" + "中" * 8 + "…"
    assert len(summary.encode("utf-8")) == 32


def test_a_multibyte_character_cut_by_the_decode_window_does_not_leak() -> None:
    # the 4-byte emoji straddles limit + 4: the windowed decode must not show U+FFFD
    body = b"a" * 10 + "😀".encode() * 3
    for limit in range(3, len(body) + 2):
        assert truncate_summary(body, limit) == _reference_truncate(body, limit)


def test_matches_the_reference_implementation_on_random_bodies() -> None:
    rng = random.Random(1129)
    alphabet = [b"a", b"\xc3\xa9", "中".encode(), "😀".encode(), b"\xff", b"\xe4\xb8", b"\x80"]
    for _ in range(3000):
        body = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        limit = rng.randint(3, 60)
        summary = truncate_summary(body, limit)
        assert summary == _reference_truncate(body, limit)
        assert len(summary.encode("utf-8")) <= limit


def test_a_timeout_reason_is_the_senders_sentence_with_its_duration() -> None:
    result = AttemptResult(None, "timed out after 5000 ms", "timeout", error_detail="ReadTimeoutError")
    assert decide(result, 1, POLICY, NOW, 0.0) == Decision("retry", 10.0, "timed out after 5000 ms")
    assert (
        decide(result, 3, POLICY, NOW, 0.0).reason == "attempts exhausted (3 of 3): timed out after 5000 ms"
    )
