"""Endpoint use cases: create, update, rotate the signing secret."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from edgecron import ids
from edgecron.data import endpoints as data
from edgecron.data import flow_control as flow_data
from edgecron.data import retry_policies as policy_data
from edgecron.data import secret_box
from edgecron.data.conditional import compare_and_set
from edgecron.data.paging import Page
from edgecron.domain.endpoints import Endpoint, SealedSecret
from edgecron.domain.event_filters import is_operational_pattern
from edgecron.domain.signing import new_secret
from edgecron.errors import NotFound, ParamInvalid
from edgecron.services import operational_events
from edgecron.services.retry_policies import DEFAULT_ID

# The API's request models, for their annotations only: the functions that never validate a request
# (the worker, the scan, the consumers) do not load the API's schemas through this module.
if TYPE_CHECKING:
    from edgecron.schemas.endpoints import EndpointCreate, EndpointUpdate

ROTATION_OVERLAP_MS = 24 * 3600 * 1000


def _check_target(url: str) -> None:
    """The SSRF guard: scheme, and every address the host resolves to now (400 on refusal). Imported
    here: the functions that read Endpoints without writing one (the scan, the consumers) never load it
    or the HTTP client it checks URLs with."""
    from edgecron.services.target_guard import TargetRefused, check_url

    try:
        check_url(url)
    except TargetRefused as exc:
        raise ParamInvalid(str(exc), "url") from None


def _check_policy(app_id: str, policy_id: str | None) -> None:
    if policy_id and policy_id != DEFAULT_ID and policy_data.get(app_id, policy_id) is None:
        raise ParamInvalid(f"retry policy {policy_id} not found", "retry_policy_id")


def create(
    app_id: str, req: EndpointCreate, now_ms: int, endpoint_id: str | None = None
) -> tuple[Endpoint, str]:
    """Create an Endpoint; its signing secret is returned once."""
    _check_target(req.url)
    _check_policy(app_id, req.retry_policy_id)
    secret = new_secret()
    endpoint = Endpoint(
        app_id=app_id,
        endpoint_id=endpoint_id or ids.new_id("ep", now_ms),
        url=req.url,
        description=req.description,
        method=req.method,
        headers=dict(req.headers),
        timeout_ms=req.timeout_ms,
        retry_policy_id=req.retry_policy_id,
        filter_events=tuple(req.filter_events),
        active=req.active,
        disable_after_failures=req.disable_after_failures,
        disable_after_sec=req.disable_after_sec,
        max_per_sec=req.max_per_sec,
        max_in_flight=req.max_in_flight,
        secrets=(SealedSecret(secret=secret_box.seal(secret), created_at=now_ms),),
        created_at=now_ms,
        updated_at=now_ms,
    )
    created = data.put_new(endpoint)
    _endpoints_changed(app_id, created.filter_events)
    return created, secret


def _endpoints_changed(app_id: str, *filters: Iterable[str]) -> None:
    """An Endpoint was written: if any filter it had or has names operational events, the App's
    record of which of them its Endpoints take is brought up to date."""
    if any(any(is_operational_pattern(p) for p in patterns) for patterns in filters):
        operational_events.refresh_subscriptions(app_id)


def find(app_id: str, endpoint_id: str, *, consistent: bool = False) -> Endpoint | None:
    return data.get(app_id, endpoint_id, consistent=consistent)


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[Endpoint]:
    return data.list_page(app_id, limit, cursor)


def get(app_id: str, endpoint_id: str, *, consistent: bool = False) -> Endpoint:
    endpoint = data.get(app_id, endpoint_id, consistent=consistent)
    if endpoint is None:
        raise NotFound(f"endpoint {endpoint_id} not found", "id")
    return endpoint


def creation_secret(endpoint: Endpoint) -> str | None:
    """The secret the Endpoint was created with, if it was never rotated: a create that died before
    answering never showed it, so the retry that answers for it may (api/idempotency.py)."""
    if len(endpoint.secrets) != 1 or endpoint.secrets[0].created_at != endpoint.created_at:
        return None
    return secret_box.unseal(endpoint.secrets[0].secret)


def update(app_id: str, endpoint_id: str, req: EndpointUpdate, now_ms: int) -> Endpoint:
    """Apply the changed fields to the current item; a concurrent change (a rotation, another
    update) makes the save fail, and the changes are applied again to what it wrote."""
    endpoint = get(app_id, endpoint_id, consistent=True)
    changes = req.model_dump(exclude_unset=True)
    nullable = {"description", "retry_policy_id", "max_per_sec", "max_in_flight"}
    for field, value in changes.items():
        if value is None and field not in nullable:
            raise ParamInvalid(f"{field} cannot be null", field)
    if "url" in changes:
        _check_target(changes["url"])
    if changes.get("retry_policy_id"):
        _check_policy(app_id, changes["retry_policy_id"])
    if "filter_events" in changes:
        changes["filter_events"] = tuple(changes["filter_events"])

    def write(current: Endpoint) -> tuple[Endpoint, Endpoint] | None:
        # Turning it on re-enables it (health starts again); turning it off is the user's own doing.
        enabling = changes.get("active") is True and not current.active
        toggled = "active" in changes and changes["active"] != current.active
        reason = None if toggled else current.disabled_reason
        saved = data.save(
            replace(current, **changes, disabled_reason=reason, updated_at=now_ms), reset_health=enabling
        )
        return None if saved is None else (current, saved)

    before, saved = compare_and_set(
        endpoint, lambda: get(app_id, endpoint_id, consistent=True), write, "endpoint"
    )
    _endpoints_changed(app_id, before.filter_events, saved.filter_events)
    return saved


def delete(app_id: str, endpoint_id: str) -> None:
    endpoint = get(app_id, endpoint_id)
    data.delete(endpoint)
    flow_data.delete(app_id, endpoint_id)  # its shared flow-control state, if it ever had limits
    _endpoints_changed(app_id, endpoint.filter_events)


def rotate_secret(app_id: str, endpoint_id: str, now_ms: int) -> tuple[Endpoint, str]:
    """A new secret signs from now on; the previous one keeps signing for 24 h so receivers can switch."""
    endpoint = get(app_id, endpoint_id, consistent=True)
    secret = new_secret()
    sealed = secret_box.seal(secret)

    def write(current: Endpoint) -> Endpoint | None:
        keep = [s for s in current.secrets if s.expires_at is None or s.expires_at > now_ms]
        previous = [replace(keep[0], expires_at=now_ms + ROTATION_OVERLAP_MS)] if keep else []
        secrets = (SealedSecret(secret=sealed, created_at=now_ms), *previous)
        return data.save(replace(current, secrets=secrets, updated_at=now_ms))

    return compare_and_set(
        endpoint, lambda: get(app_id, endpoint_id, consistent=True), write, "endpoint"
    ), secret


def active_secrets(endpoint: Endpoint, now_ms: int) -> list[str]:
    """Secrets that sign a delivery now: the current one, and the previous one during its overlap."""
    return signing_secrets(unsealed_secrets(endpoint, now_ms), now_ms)


def unsealed_secrets(endpoint: Endpoint, now_ms: int) -> tuple[tuple[str, int | None], ...]:
    """The Endpoint's secrets not expired at `now_ms`, decrypted, each with its expiry: what signs
    its deliveries from then on (signing_secrets picks those still valid at a later time)."""
    return tuple(
        (secret_box.unseal(s.secret), s.expires_at)
        for s in endpoint.secrets
        if s.expires_at is None or s.expires_at > now_ms
    )


def signing_secrets(unsealed: tuple[tuple[str, int | None], ...], now_ms: int) -> list[str]:
    return [secret for secret, expires_at in unsealed if expires_at is None or expires_at > now_ms]
