"""A Retry Policy of an App, as stored (domain/retry.py decides with its RetryPolicySpec)."""

from __future__ import annotations

from dataclasses import dataclass

from edgecron.domain.retry import RetryPolicySpec
from edgecron.domain.vocabulary import RetryStrategy


@dataclass(frozen=True)
class RetryPolicy:
    app_id: str
    policy_id: str
    name: str | None
    strategy: RetryStrategy
    max_attempts: int
    base_delay_sec: int
    max_delay_sec: int
    jitter: bool = False
    created_at: int | None = None
    updated_at: int | None = None
    version: int | None = None  # moves on every save; None: written before versions

    @property
    def spec(self) -> RetryPolicySpec:
        return RetryPolicySpec(
            strategy=self.strategy,
            max_attempts=self.max_attempts,
            base_delay_sec=self.base_delay_sec,
            max_delay_sec=self.max_delay_sec,
            jitter=self.jitter,
        )
