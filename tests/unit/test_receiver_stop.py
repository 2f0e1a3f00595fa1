"""A receiver can end the retries of a run: `edgecron-retry: stop` on a failed attempt makes the run
`failed` with `receiver_stopped` at once, whatever the retry policy has left. Parsing the header is
total: anything but the token `stop` is ignored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from edgecron.domain.outcome import AttemptResult, decide, parse_retry_directive
from edgecron.domain.retry import RetryPolicySpec
from edgecron.domain.vocabulary import ErrorKind

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
POLICY = RetryPolicySpec("exponential", 5, 10, 600, False)


@pytest.mark.parametrize("raw", ["stop", "STOP", "  Stop  ", "stop\t"])
def test_the_stop_token_is_read_whatever_its_case_and_spacing(raw: str) -> None:
    assert parse_retry_directive(raw) == "stop"


@pytest.mark.parametrize(
    "raw",
    [None, "", "   ", "stopp", "no-stop", "stop, now", "retry", "s\u0074op\x00", "\udcff", "x" * 10_000],
)
def test_any_other_value_is_ignored(raw: str | None) -> None:
    assert parse_retry_directive(raw) is None


@pytest.mark.parametrize("status", [500, 503, 429, 408])
def test_stop_on_a_retryable_failure_fails_the_run_at_once(status: int) -> None:
    result = AttemptResult(status, retry_after="5", retry_directive="stop")
    decision = decide(result, 1, POLICY, NOW, 0.5)
    assert decision.outcome == "failed"
    assert decision.delay_sec is None
    assert decision.error_kind == ErrorKind.RECEIVER_STOPPED
    assert decision.reason.startswith(
        f"receiver asked to stop retrying (edgecron-retry: stop): HTTP {status}"
    )


def test_stop_on_the_last_attempt_is_a_failure_not_a_dead_letter() -> None:
    decision = decide(AttemptResult(503, retry_directive="stop"), 5, POLICY, NOW, 0.5)
    assert decision.outcome == "failed" and decision.error_kind == ErrorKind.RECEIVER_STOPPED


def test_stop_on_a_terminal_failure_names_the_receiver() -> None:
    decision = decide(AttemptResult(404, retry_directive="stop"), 1, POLICY, NOW, 0.5)
    assert decision.outcome == "failed" and decision.error_kind == ErrorKind.RECEIVER_STOPPED


def test_stop_on_a_success_changes_nothing() -> None:
    decision = decide(AttemptResult(200, retry_directive="stop"), 1, POLICY, NOW, 0.5)
    assert decision.outcome == "success" and decision.error_kind is None


def test_without_the_header_a_failure_keeps_its_own_kind() -> None:
    decision = decide(AttemptResult(503), 1, POLICY, NOW, 0.5)
    assert decision.outcome == "retry" and decision.error_kind is None


def test_an_unknown_directive_leaves_the_retries_to_the_policy() -> None:
    decision = decide(AttemptResult(503, retry_directive="later"), 1, POLICY, NOW, 0.5)
    assert decision.outcome == "retry"
