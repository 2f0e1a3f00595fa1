"""Entity → response model: Retry Policies."""

from __future__ import annotations

from edgecron.clock import iso_ms
from edgecron.domain.retry_policies import RetryPolicy
from edgecron.schemas.retry_policies import RetryPolicyOut


def retry_policy_out(p: RetryPolicy) -> RetryPolicyOut:
    return RetryPolicyOut(
        id=p.policy_id,
        name=p.name,
        strategy=p.strategy,
        max_attempts=p.max_attempts,
        base_delay_sec=p.base_delay_sec,
        max_delay_sec=p.max_delay_sec,
        jitter=p.jitter,
        created_at=iso_ms(p.created_at),
        updated_at=iso_ms(p.updated_at),
    )
