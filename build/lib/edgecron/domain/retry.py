"""Retry policies: validation, backoff delays and the ``Retry-After`` header.

Pure module: no clock, no global RNG, no I/O. The current time and the random
draw are parameters, so every result is reproducible in a test.

Conventions
-----------
* Attempt numbers start at 1. ``max_attempts`` counts the first attempt, so
  ``max_attempts=3`` means one delivery plus two retries.
* ``backoff_delay(policy, n, rand)`` is the wait *after* attempt ``n`` failed and
  *before* attempt ``n + 1``:

  - ``fixed``:       ``base``
  - ``linear``:      ``base * n``
  - ``exponential``: ``base * 2 ** (n - 1)``

  The raw delay is clamped to ``max_delay_sec``. With ``jitter`` the delay uses
  *equal jitter*: ``d / 2 + rand * d / 2``, i.e. a value in ``[d/2, d)``. Equal
  jitter (rather than "full jitter", ``rand * d``) was chosen so that a retry
  never fires immediately after a failure yet retries of many runs failing
  together still spread out. The result is never below 1 s and never above
  ``max_delay_sec``.
* Delays from 1 s to 24 h (86 400 s) are representable: ``base_delay_sec`` and
  ``max_delay_sec`` are both allowed in ``[1, 86400]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Final

from edgecron.domain.vocabulary import RetryStrategy

Strategy = RetryStrategy

STRATEGIES: Final[tuple[str, ...]] = tuple(RetryStrategy)
MIN_ATTEMPTS: Final = 1
MAX_ATTEMPTS: Final = 20
MIN_DELAY_SEC: Final = 1
MAX_DELAY_SEC: Final = 86_400  # 24 h

# Exponents above this cannot matter: base >= 1 and 2**17 > MAX_DELAY_SEC, so the
# clamp always wins. Capping avoids building huge integers for absurd inputs.
_MAX_EXPONENT: Final = 32

# The longest wait a Retry-After can ask for (2**31 s, about 68 years): a larger delta-seconds or a
# later date means the same, as RFC 9111 section 1.2.2 treats an overflowing delta. Far above any
# policy's max_delay_sec, so the policy always decides; and a float never overflows on the way.
RETRY_AFTER_MAX_SEC: Final = 2_147_483_648.0
_MAX_DELTA_DIGITS: Final = len(str(int(RETRY_AFTER_MAX_SEC)))

_DELTA_SECONDS = re.compile(r"[0-9]+")


class PolicyError(ValueError):
    """An invalid retry policy. ``field`` names the offending attribute."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class RetryPolicySpec:
    """How a Task Run is retried. Validate with :func:`validate_policy`."""

    strategy: Strategy
    max_attempts: int  # including the first attempt, 1-20
    base_delay_sec: int  # 1-86400
    max_delay_sec: int  # 1-86400 and >= base_delay_sec
    jitter: bool


DEFAULT_POLICY: Final = RetryPolicySpec(
    strategy=RetryStrategy.FIXED,
    max_attempts=3,
    base_delay_sec=300,
    # With the fixed strategy max_delay_sec only bounds a 429 Retry-After delay:
    # an hour lets a receiver ask for a longer pause than the 5 minute backoff.
    max_delay_sec=3600,
    # No jitter by default: the documented default is exactly "fixed 300 s".
    jitter=False,
)
"""The default policy: 3 attempts, fixed 300 s, no jitter."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_policy(policy: RetryPolicySpec) -> RetryPolicySpec:
    """Check every bound of ``policy``; return it unchanged or raise :class:`PolicyError`."""
    if policy.strategy not in STRATEGIES:
        raise PolicyError("strategy", f"must be one of {', '.join(STRATEGIES)}")
    if not _is_int(policy.max_attempts) or not MIN_ATTEMPTS <= policy.max_attempts <= MAX_ATTEMPTS:
        raise PolicyError("max_attempts", f"must be an integer from {MIN_ATTEMPTS} to {MAX_ATTEMPTS}")
    if not _is_int(policy.base_delay_sec) or not MIN_DELAY_SEC <= policy.base_delay_sec <= MAX_DELAY_SEC:
        raise PolicyError("base_delay_sec", f"must be an integer from {MIN_DELAY_SEC} to {MAX_DELAY_SEC}")
    if not _is_int(policy.max_delay_sec) or not MIN_DELAY_SEC <= policy.max_delay_sec <= MAX_DELAY_SEC:
        raise PolicyError("max_delay_sec", f"must be an integer from {MIN_DELAY_SEC} to {MAX_DELAY_SEC}")
    if policy.max_delay_sec < policy.base_delay_sec:
        raise PolicyError("max_delay_sec", "must be greater than or equal to base_delay_sec")
    if not isinstance(policy.jitter, bool):
        raise PolicyError("jitter", "must be a boolean")
    return policy


def _check_rand(rand: float) -> None:
    if not 0.0 <= rand < 1.0:
        raise ValueError(f"rand must be in [0, 1), got {rand!r}")


def _check_attempt_number(attempt_number: int) -> None:
    if not _is_int(attempt_number) or attempt_number < 1:
        raise ValueError(f"attempt_number must be an integer >= 1, got {attempt_number!r}")


def backoff_delay(policy: RetryPolicySpec, attempt_number: int, rand: float) -> float:
    """Seconds to wait after attempt ``attempt_number`` failed, before the next one.

    ``rand`` is a uniform draw in ``[0, 1)`` supplied by the caller (e.g.
    ``random.Random().random()``); it is ignored unless ``policy.jitter``.
    The result is in ``[1, policy.max_delay_sec]``.
    """
    validate_policy(policy)
    _check_attempt_number(attempt_number)
    _check_rand(rand)

    base = policy.base_delay_sec
    if policy.strategy == "fixed":
        raw = base
    elif policy.strategy == "linear":
        raw = base * attempt_number
    else:  # exponential
        raw = base * 2 ** min(attempt_number - 1, _MAX_EXPONENT)

    delay = float(min(raw, policy.max_delay_sec))
    if policy.jitter:
        half = delay / 2.0
        delay = half + rand * half
    return min(max(delay, float(MIN_DELAY_SEC)), float(policy.max_delay_sec))


def clamp_delay(seconds: float, policy: RetryPolicySpec) -> float:
    """Clamp a delay (e.g. from ``Retry-After``) to ``[1, policy.max_delay_sec]``."""
    return min(max(float(seconds), float(MIN_DELAY_SEC)), float(policy.max_delay_sec))


def parse_retry_after(value: object, now: datetime) -> float | None:
    """Parse a ``Retry-After`` header value (RFC 9110 section 10.2.3).

    Returns the number of seconds from ``now`` to wait, or ``None`` when the
    value is absent or invalid. Total: a receiver chooses this text, so no
    value raises.

    * delta-seconds: ASCII digits only (``"120"``); a sign, a fraction
      (``"1.5"``) or anything else makes it invalid;
    * HTTP-date: IMF-fixdate (``"Wed, 21 Oct 2015 07:28:00 GMT"``) and the
      obsolete RFC 850 and asctime forms. A date without a zone (asctime) is
      UTC. A date at or before ``now`` means "retry now" and returns ``0.0``;
      callers clamp to their 1 s floor (see :func:`clamp_delay`).

    Either form is capped at :data:`RETRY_AFTER_MAX_SEC` (a delta of 400
    digits is a valid, very long wait). Surrounding whitespace is ignored; a
    value that is not text is invalid. A naive ``now`` is taken as UTC.
    The result is not clamped to any policy maximum.
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return None
    if _DELTA_SECONDS.fullmatch(text):
        digits = text.lstrip("0") or "0"
        if len(digits) > _MAX_DELTA_DIGITS:  # also keeps int() below its 4,300-digit limit
            return RETRY_AFTER_MAX_SEC
        return min(float(int(digits)), RETRY_AFTER_MAX_SEC)
    if not any(c.isalpha() for c in text):
        # Not delta-seconds, and no HTTP-date lacks a month name: "-1", "1.5", "1e3".
        return None
    try:
        when = parsedate_to_datetime(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        seconds = (when - now).total_seconds()
    except (ValueError, TypeError, IndexError, OverflowError):
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_MAX_SEC)
