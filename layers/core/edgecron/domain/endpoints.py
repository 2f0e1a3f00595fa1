"""An Endpoint: where EdgeCron delivers, and the signing secrets it signs with."""

from __future__ import annotations

from dataclasses import dataclass, field

from edgecron.domain.vocabulary import HttpMethod


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
