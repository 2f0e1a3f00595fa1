"""Retry Policies of an App. Reads return `RetryPolicy` entities; writes take them."""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron.data.conditional import save_if_unchanged
from edgecron.data.models import RetryPolicyModel
from edgecron.data.paging import Page, query_page
from edgecron.domain.retry_policies import RetryPolicy
from edgecron.domain.vocabulary import RetryStrategy

M = RetryPolicyModel


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def to_entity(row: RetryPolicyModel) -> RetryPolicy:
    return RetryPolicy(
        app_id=row.app_id,
        policy_id=row.policy_id,
        name=row.name,
        strategy=RetryStrategy(row.strategy),
        max_attempts=int(row.max_attempts),
        base_delay_sec=int(row.base_delay_sec),
        max_delay_sec=int(row.max_delay_sec),
        jitter=bool(row.jitter),
        created_at=_int(row.created_at),
        updated_at=_int(row.updated_at),
        version=_int(row.version),
    )


def _row(policy: RetryPolicy) -> RetryPolicyModel:
    return M(
        app_id=policy.app_id,
        policy_id=policy.policy_id,
        name=policy.name,
        strategy=str(policy.strategy),
        max_attempts=policy.max_attempts,
        base_delay_sec=policy.base_delay_sec,
        max_delay_sec=policy.max_delay_sec,
        jitter=policy.jitter,
        created_at=policy.created_at,
        updated_at=policy.updated_at,
        version=policy.version,
    )


def get(app_id: str, policy_id: str, *, consistent: bool = False) -> RetryPolicy | None:
    try:
        return to_entity(M.get(app_id, policy_id, consistent_read=consistent))
    except DoesNotExist:
        return None


def put_new(policy: RetryPolicy) -> RetryPolicy:
    """Create the item (never over another one); returns it at version 1."""
    row = _row(policy)
    row.version = 1
    row.save(condition=M.policy_id.does_not_exist())
    return to_entity(row)


def save(policy: RetryPolicy) -> RetryPolicy | None:
    """Compare-and-set on the version read (see data/endpoints.py): what was written, or None."""
    row = _row(policy)
    return to_entity(row) if save_if_unchanged(row, M.policy_id.exists()) else None


def delete(policy: RetryPolicy) -> None:
    M(app_id=policy.app_id, policy_id=policy.policy_id).delete()


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[RetryPolicy]:
    page = query_page(M, app_id, limit, cursor, newest_first=True)
    return Page([to_entity(row) for row in page.items], page.last_key)
