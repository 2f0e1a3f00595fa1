"""Classify one Delivery Attempt and decide what happens to its Task Run.

Pure module: the current time and the random draw are parameters.

Decision table, evaluated in this order:

====================================  ===========  ==============================
attempt                               retryable?   outcome
====================================  ===========  ==============================
``endpoint_inactive``                 no           ``failed`` "endpoint inactive"
``endpoint_deleted``                  no           ``failed`` "endpoint deleted"
``endpoint_disabled`` (for failing)   no           ``dead_letter`` "endpoint disabled ...",
                                                   not sent: replayable once re-enabled
``refused`` (SSRF and similar)        no           ``failed`` "target refused: ..."
``invalid_request`` (not sendable)    no           ``failed`` "request not sent: ..."
``timeout``                           yes          "timed out after N ms" (or "timeout")
``network``                           yes          "network error: ..."
``invalid_response`` (broken HTTP)    yes          "invalid response: ..."
``redirect`` or HTTP 3xx              no           ``failed``, redirects are not followed
HTTP 2xx                              --           ``success``
HTTP 429 with a valid Retry-After     yes          delay = Retry-After clamped to
                                                   ``[1, max_delay_sec]``, no jitter
HTTP 429 without a valid Retry-After  no           ``failed``
other HTTP 4xx                        no           ``failed``
HTTP 5xx                              yes          "HTTP 5xx"
any other status (1xx, >= 600)        no           ``failed`` "unexpected HTTP status"
no status, no kind, an error text     yes          treated like a network error
====================================  ===========  ==============================

A failed attempt whose response carries ``edgecron-retry: stop`` ends the run at once: ``failed``
with ``error_kind`` ``receiver_stopped``, whatever the table says and the policy has left. A success
ignores the header, and so does any value other than the token ``stop``.

A retryable failure on attempt ``n >= policy.max_attempts`` becomes
``dead_letter`` ("attempts exhausted (n of max): <reason>"); otherwise it is
``retry`` with ``delay_sec`` from :func:`~edgecron.domain.retry.backoff_delay`
(or from Retry-After for a 429).

An ``invalid_request`` is a request that could not be put on the wire as stored (a header value
that cannot be encoded, say): sending it again fails the same way, so it is terminal. An
``invalid_response`` is an answer that is not HTTP (a garbage status line, a header line beyond the
client's limits): a receiver may recover from that, so it is retried like a network error.

The non-HTTP error kinds win over ``status_code``: an attempt that timed out
while reading the body of a 200 is a timeout, and is retried (receivers
de-duplicate on the stable ``webhook-id``). The ``http_*`` kinds are only
descriptive; ``status_code`` decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from edgecron.domain.retry import (
    RetryPolicySpec,
    backoff_delay,
    clamp_delay,
    parse_retry_after,
    validate_policy,
)
from edgecron.domain.vocabulary import ErrorKind

Outcome = Literal["success", "retry", "failed", "dead_letter"]

SUMMARY_LIMIT: Final = 1024
TRUNCATION_MARKER: Final = "\u2026"  # "…", 3 bytes in UTF-8
_MARKER_BYTES: Final = len(TRUNCATION_MARKER.encode("utf-8"))
_QUOTE_LIMIT: Final = 40  # characters of a receiver's Retry-After quoted in a reason
RETRY_DIRECTIVE_HEADER: Final = "edgecron-retry"
STOP: Final = "stop"


@dataclass(frozen=True)
class AttemptResult:
    """What one outbound HTTP call produced."""

    status_code: int | None
    # a short sentence for people, e.g. "connection refused (203.0.113.9:443)", "timed out after
    # 5000 ms", "DNS lookup failed (hooks.example.com)", "TLS certificate not trusted (...)"
    error: str | None = None
    error_kind: ErrorKind | None = None
    retry_after: str | None = None  # the raw Retry-After header value
    retry_directive: str | None = None  # the raw edgecron-retry header value
    error_detail: str | None = None  # what the HTTP library or the OS said, for debugging


@dataclass(frozen=True)
class Decision:
    """What to do with the Task Run after an attempt."""

    outcome: Outcome
    delay_sec: float | None  # only for "retry": seconds until the next attempt
    reason: str  # human readable, e.g. "HTTP 503", "attempts exhausted (3 of 3): HTTP 503"
    error_kind: ErrorKind | None = None  # set when the decision, not the attempt, names the kind


@dataclass(frozen=True)
class _Verdict:
    kind: Literal["success", "retryable", "terminal", "parked"]
    reason: str
    retry_after_sec: float | None = None


def _with_detail(label: str, error: str | None) -> str:
    if not error:
        return label
    return error if error.startswith(f"{label}:") else f"{label}: {error}"


def _timeout_reason(error: str | None) -> str:
    """The sender's own sentence ("timed out after 5000 ms") when it wrote one, else "timeout"."""
    return error if error is not None and error.startswith("timed out") else "timeout"


def _quote(raw: str) -> str:
    """A receiver's header value, bounded, for a reason stored on the run."""
    text = raw.strip()
    return text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 1] + TRUNCATION_MARKER


def parse_retry_directive(raw: str | None) -> Literal["stop"] | None:
    """The receiver's ``edgecron-retry`` header: ``"stop"`` for the token stop (any case, surrounding
    spaces), None for anything else, so an unknown or garbled value never changes a decision."""
    if raw is None or len(raw) > 16:
        return None
    return STOP if raw.strip(" \t").lower() == STOP else None


def _classify(result: AttemptResult, now: datetime) -> _Verdict:
    kind = result.error_kind
    status = result.status_code
    if kind == "endpoint_inactive":
        return _Verdict("terminal", "endpoint inactive")
    if kind == "endpoint_deleted":
        return _Verdict("terminal", "endpoint deleted")
    if kind == "endpoint_disabled":
        return _Verdict("parked", _with_detail("endpoint disabled", result.error))
    if kind == "refused":
        return _Verdict("terminal", _with_detail("target refused", result.error))
    if kind == "invalid_request":
        return _Verdict("terminal", _with_detail("request not sent", result.error))
    if kind == "timeout":
        return _Verdict("retryable", _timeout_reason(result.error))
    if kind == "network":
        return _Verdict("retryable", _with_detail("network error", result.error))
    if kind == "invalid_response":
        return _Verdict("retryable", _with_detail("invalid response", result.error))
    if kind == "redirect" and (status is None or not 300 <= status <= 399):
        return _Verdict("terminal", "redirect not followed")

    if status is None:
        if result.error:
            return _Verdict("retryable", f"error: {result.error}")
        raise ValueError("AttemptResult needs a status_code, an error_kind or an error")
    if isinstance(status, bool) or not isinstance(status, int):
        raise ValueError(f"status_code must be an int, got {status!r}")

    if 200 <= status <= 299:
        return _Verdict("success", f"HTTP {status}")
    if 300 <= status <= 399:
        return _Verdict("terminal", f"HTTP {status}: redirects are not followed")
    if status == 429:
        raw = result.retry_after
        seconds = parse_retry_after(raw, now)
        if raw is None or seconds is None:
            return _Verdict("terminal", "HTTP 429 without a valid Retry-After")
        return _Verdict("retryable", f"HTTP 429 (Retry-After: {_quote(raw)})", seconds)
    if 400 <= status <= 499:
        return _Verdict("terminal", f"HTTP {status}")
    if 500 <= status <= 599:
        return _Verdict("retryable", f"HTTP {status}")
    return _Verdict("terminal", f"unexpected HTTP status {status}")


def decide(
    result: AttemptResult,
    attempt_number: int,
    policy: RetryPolicySpec,
    now: datetime,
    rand: float,
) -> Decision:
    """Decide the Task Run's fate after attempt ``attempt_number`` (1-based).

    ``now`` anchors an HTTP-date Retry-After; ``rand`` in ``[0, 1)`` feeds the
    backoff jitter. See the module docstring for the table.
    """
    validate_policy(policy)
    if isinstance(attempt_number, bool) or not isinstance(attempt_number, int) or attempt_number < 1:
        raise ValueError(f"attempt_number must be an integer >= 1, got {attempt_number!r}")
    if not 0.0 <= rand < 1.0:
        raise ValueError(f"rand must be in [0, 1), got {rand!r}")

    verdict = _classify(result, now)
    if verdict.kind == "success":
        return Decision("success", None, verdict.reason)
    if parse_retry_directive(result.retry_directive) == STOP:
        reason = f"receiver asked to stop retrying ({RETRY_DIRECTIVE_HEADER}: {STOP}): {verdict.reason}"
        return Decision("failed", None, reason, ErrorKind.RECEIVER_STOPPED)
    if verdict.kind == "terminal":
        return Decision("failed", None, verdict.reason)
    if verdict.kind == "parked":
        return Decision("dead_letter", None, verdict.reason)
    if attempt_number >= policy.max_attempts:
        return Decision(
            "dead_letter",
            None,
            f"attempts exhausted ({attempt_number} of {policy.max_attempts}): {verdict.reason}",
        )
    if verdict.retry_after_sec is not None:
        delay = clamp_delay(verdict.retry_after_sec, policy)
    else:
        delay = backoff_delay(policy, attempt_number, rand)
    return Decision("retry", delay, verdict.reason)


def truncate_summary(body: bytes, limit: int = SUMMARY_LIMIT) -> str:
    """A response body as text for the attempt record, at most ``limit`` UTF-8 bytes.

    Invalid UTF-8 is replaced with U+FFFD. When the text does not fit, it is cut
    on a character boundary and ends with "…"; the marker counts toward
    ``limit`` so the result never exceeds it (``limit`` must be >= 3).
    Only the first ``limit + 4`` bytes of ``body`` are decoded: every input
    byte yields at least one output byte, so a longer body is always truncated,
    and a cut inside the last character cannot reach the kept prefix.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < _MARKER_BYTES:
        raise ValueError(f"limit must be an integer >= {_MARKER_BYTES}, got {limit!r}")
    window = bytes(body[: limit + 4])
    text = window.decode("utf-8", errors="replace")
    encoded = text.encode("utf-8")
    if len(body) <= limit + 4 and len(encoded) <= limit:
        return text
    kept = encoded[: limit - _MARKER_BYTES].decode("utf-8", errors="ignore")
    return kept + TRUNCATION_MARKER
