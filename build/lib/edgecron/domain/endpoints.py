"""An Endpoint: where EdgeCron delivers, and the signing secrets it signs with."""

from __future__ import annotations

from dataclasses import dataclass, field

from edgecron.domain.endpoint_health import (
    DEFAULT_DISABLE_AFTER_FAILURES,
    DEFAULT_DISABLE_AFTER_SEC,
    DisablePolicy,
    EndpointHealth,
    state,
)
from edgecron.domain.flow_control import FlowLimits
from edgecron.domain.vocabulary import DisabledReason, HealthState, HttpMethod


@dataclass(frozen=True)
class SealedSecret:
    """A signing secret as stored: sealed (encrypted when a KMS key is configured). The previous
    secret gets `expires_at` at a rotation and keeps signing until then."""

    secret: str
    created_at: int
    expires_at: int | None = None


@dataclass(frozen=True)
class Endpoint:
    app_id: str
    endpoint_id: str
    url: str
    created_at: int
    updated_at: int
    description: str | None = None
    method: HttpMethod = HttpMethod.POST
    # As stored: an item written by an older version may hold what the delivery refuses to send.
    headers: dict[str, str] = field(default_factory=dict)
    timeout_ms: int = 10_000
    retry_policy_id: str | None = None
    filter_events: tuple[str, ...] = ()
    active: bool = True
    secrets: tuple[SealedSecret, ...] = ()
    version: int | None = None  # moves on every save; None: written before versions
    disable_after_failures: int = DEFAULT_DISABLE_AFTER_FAILURES
    disable_after_sec: int = DEFAULT_DISABLE_AFTER_SEC
    disabled_reason: DisabledReason | None = None  # set when EdgeCron, not a user, turned it off
    health: EndpointHealth = field(default_factory=EndpointHealth)
    # Flow control (None: unlimited), enforced across every worker (domain/flow_control.py)
    max_per_sec: float | None = None
    max_in_flight: int | None = None

    @property
    def flow_limits(self) -> FlowLimits | None:
        """The Endpoint's flow control, or None when it has none (its deliveries cost nothing extra)."""
        if self.max_per_sec is None and self.max_in_flight is None:
            return None
        return FlowLimits(self.max_per_sec, self.max_in_flight)

    @property
    def disable_policy(self) -> DisablePolicy:
        return DisablePolicy(self.disable_after_failures, self.disable_after_sec)

    @property
    def health_state(self) -> HealthState:
        return state(self.health, self.disabled_reason)

    @property
    def receives_runs(self) -> bool:
        return receives_runs(self.active, self.disabled_reason)


@dataclass(frozen=True)
class Subscriber:
    """What a fan-out reads of an Endpoint to decide whether a page makes it a run (never its
    URL or secrets)."""

    endpoint_id: str
    active: bool
    disabled_reason: DisabledReason | None
    filter_events: tuple[str, ...]

    @property
    def receives_runs(self) -> bool:
        return receives_runs(self.active, self.disabled_reason)


def receives_runs(active: bool | None, disabled_reason: str | None) -> bool:
    """Whether new runs are made for an Endpoint: one disabled for failing still gets them (as dead
    letters, so nothing published while it is down is lost); one a user turned off does not."""
    return bool(active) or disabled_reason == DisabledReason.FAILING
