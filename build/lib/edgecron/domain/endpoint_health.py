"""Endpoint health: how an Endpoint's finished runs went, and when EdgeCron disables it.

Pure module. A finished run counts once: a success resets the count, a run that ended ``failed`` or
``dead_letter`` adds one, and a run that was never sent because of the Endpoint's own state (deleted,
turned off, already disabled) counts for nothing. An Endpoint is disabled when both limits are
reached: ``disable_after_failures`` runs in a row (0 = never) over at least ``disable_after_sec``
seconds since the first of them, so a short burst of failures never disables a busy Endpoint and a
quiet one is not disabled by a handful of failures spread over days.

Keeping health costs no write on the success path of a healthy Endpoint: a success is written only
when it ends a failing streak, or when the stored ``last_success_at`` is older than
:data:`SUCCESS_RESOLUTION_MS` (so it is exact to a minute, not to the run).
"""

from __future__ import annotations

from dataclasses import dataclass

from edgecron.domain.vocabulary import DisabledReason, ErrorKind, HealthState

DEFAULT_DISABLE_AFTER_FAILURES = 100
DEFAULT_DISABLE_AFTER_SEC = 5 * 86_400  # five days
MAX_DISABLE_AFTER_FAILURES = 1_000_000
MAX_DISABLE_AFTER_SEC = 365 * 86_400
SUCCESS_RESOLUTION_MS = 60_000

# Runs that never reached the receiver because of the Endpoint's own state say nothing about it.
NOT_THE_RECEIVERS: frozenset[ErrorKind] = frozenset(
    {ErrorKind.ENDPOINT_DELETED, ErrorKind.ENDPOINT_INACTIVE, ErrorKind.ENDPOINT_DISABLED}
)


@dataclass(frozen=True)
class EndpointHealth:
    """What is stored about an Endpoint's recent runs (times in ms since the epoch)."""

    consecutive_failures: int = 0
    failing_since: int | None = None  # the end of the first failed run of the streak
    last_success_at: int | None = None


@dataclass(frozen=True)
class DisablePolicy:
    """When failing turns into disabled; both limits must be reached."""

    after_failures: int = DEFAULT_DISABLE_AFTER_FAILURES  # 0: never disable
    after_sec: int = DEFAULT_DISABLE_AFTER_SEC


def state(health: EndpointHealth, disabled_reason: DisabledReason | None) -> HealthState:
    if disabled_reason == DisabledReason.FAILING:
        return HealthState.DISABLED
    return HealthState.FAILING if health.consecutive_failures > 0 else HealthState.HEALTHY


def counts(status_failed: bool, error_kind: str | None) -> bool:
    """Does a failed run count against its Endpoint? Not when the Endpoint's own state stopped it."""
    return status_failed and error_kind not in NOT_THE_RECEIVERS


def should_disable(health: EndpointHealth, policy: DisablePolicy, now_ms: int) -> bool:
    """Both limits reached (the streak is long enough and old enough)."""
    if policy.after_failures <= 0 or health.consecutive_failures < policy.after_failures:
        return False
    since = health.failing_since if health.failing_since is not None else now_ms
    return now_ms - since >= policy.after_sec * 1000


def success_needs_write(health: EndpointHealth, now_ms: int) -> bool:
    """Whether a success changes what is stored: it ends a streak, or the last success on record is
    older than the resolution (or missing)."""
    if health.consecutive_failures > 0 or health.failing_since is not None:
        return True
    last = health.last_success_at
    return last is None or now_ms - last >= SUCCESS_RESOLUTION_MS
