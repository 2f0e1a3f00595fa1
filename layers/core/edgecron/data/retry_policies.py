"""Retry Policies of an App."""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron.data.conditional import save_if_unchanged
from edgecron.data.models import RetryPolicyModel
from edgecron.data.paging import Page, query_page


def get(app_id: str, policy_id: str, *, consistent: bool = False) -> RetryPolicyModel | None:
    try:
        return RetryPolicyModel.get(app_id, policy_id, consistent_read=consistent)
    except DoesNotExist:
        return None


def put_new(policy: RetryPolicyModel) -> None:
    policy.version = 1
    policy.save(condition=RetryPolicyModel.policy_id.does_not_exist())


def save(policy: RetryPolicyModel) -> bool:
    """Write the whole item only if nobody changed it since it was read (see data/endpoints.py)."""
    return save_if_unchanged(policy, RetryPolicyModel.policy_id.exists())


def delete(policy: RetryPolicyModel) -> None:
    policy.delete()


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[RetryPolicyModel]:
    return query_page(RetryPolicyModel, app_id, limit, cursor, newest_first=True)
