"""Retry Policy use cases, and the policy that applies to a run."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from edgecron import ids
from edgecron.data import endpoints as endpoint_data
from edgecron.data import retry_policies as data
from edgecron.data.conditional import compare_and_set
from edgecron.data.paging import Page
from edgecron.domain.retry import DEFAULT_POLICY, RetryPolicySpec
from edgecron.domain.retry_policies import RetryPolicy
from edgecron.domain.vocabulary import RetryStrategy
from edgecron.errors import Conflict, NotFound, ParamInvalid

# The API's request models, for their annotations only: the functions that never validate a request
# (the worker, the scan, the consumers) do not load the API's schemas through this module.
if TYPE_CHECKING:
    from edgecron.schemas.retry_policies import RetryPolicyCreate, RetryPolicyUpdate

DEFAULT_ID = "default"


def default_model() -> RetryPolicy:
    """The built-in policy (3 attempts, fixed 300 s) used when an Endpoint names none."""
    return RetryPolicy(
        app_id="",
        policy_id=DEFAULT_ID,
        name="default",
        strategy=RetryStrategy(DEFAULT_POLICY.strategy),
        max_attempts=DEFAULT_POLICY.max_attempts,
        base_delay_sec=DEFAULT_POLICY.base_delay_sec,
        max_delay_sec=DEFAULT_POLICY.max_delay_sec,
        jitter=DEFAULT_POLICY.jitter,
    )


def _check(base: int, maximum: int) -> None:
    if maximum < base:
        raise ParamInvalid("max_delay_sec must be greater than or equal to base_delay_sec", "max_delay_sec")


def create(app_id: str, req: RetryPolicyCreate, now_ms: int, policy_id: str | None = None) -> RetryPolicy:
    _check(req.base_delay_sec, req.max_delay_sec)
    policy = RetryPolicy(
        app_id=app_id,
        policy_id=policy_id or ids.new_id("rp", now_ms),
        created_at=now_ms,
        updated_at=now_ms,
        **req.model_dump(),
    )
    return data.put_new(policy)


def find(app_id: str, policy_id: str, *, consistent: bool = False) -> RetryPolicy | None:
    return data.get(app_id, policy_id, consistent=consistent)


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[RetryPolicy]:
    return data.list_page(app_id, limit, cursor)


def get(app_id: str, policy_id: str, *, consistent: bool = False) -> RetryPolicy:
    if policy_id == DEFAULT_ID:
        return default_model()
    policy = data.get(app_id, policy_id, consistent=consistent)
    if policy is None:
        raise NotFound(f"retry policy {policy_id} not found", "id")
    return policy


def update(app_id: str, policy_id: str, req: RetryPolicyUpdate, now_ms: int) -> RetryPolicy:
    """Apply the changed fields to the current item and check the result; a concurrent update makes
    the save fail, and the changes are applied (and checked) again on top of it."""
    if policy_id == DEFAULT_ID:
        raise Conflict("the default retry policy cannot be changed; create your own", "id")
    policy = get(app_id, policy_id, consistent=True)
    changes = req.model_dump(exclude_unset=True)
    for field, value in changes.items():
        if value is None and field != "name":
            raise ParamInvalid(f"{field} cannot be null", field)

    def write(current: RetryPolicy) -> RetryPolicy | None:
        changed = replace(current, **changes, updated_at=now_ms)
        _check(changed.base_delay_sec, changed.max_delay_sec)
        return data.save(changed)

    return compare_and_set(policy, lambda: get(app_id, policy_id, consistent=True), write, "retry policy")


def delete(app_id: str, policy_id: str) -> None:
    if policy_id == DEFAULT_ID:
        raise Conflict("the default retry policy cannot be deleted", "id")
    policy = get(app_id, policy_id)
    users = [ep.endpoint_id for ep in endpoint_data.all_for_app(app_id) if ep.retry_policy_id == policy_id]
    if users:
        raise Conflict(f"retry policy is used by {len(users)} endpoint(s), e.g. {users[0]}", "id")
    data.delete(policy)


def spec_of(policy: RetryPolicy) -> RetryPolicySpec:
    return policy.spec


def resolve_spec(app_id: str, policy_id: str | None) -> RetryPolicySpec:
    """The policy a run follows; a policy deleted meanwhile falls back to the default."""
    if not policy_id or policy_id == DEFAULT_ID:
        return DEFAULT_POLICY
    policy = data.get(app_id, policy_id)
    return spec_of(policy) if policy is not None else DEFAULT_POLICY
