"""Apps and their API keys (stored only as SHA-256 hashes). Reads return `App` and `ApiKey`
entities."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from functools import lru_cache
from typing import Any

from pynamodb.exceptions import DeleteError, DoesNotExist

from edgecron import clock, ids
from edgecron.data import run_checks
from edgecron.data.aws import caller, client
from edgecron.data.conditional import condition_failed, update_if
from edgecron.data.models import ApiKeyModel, AppModel
from edgecron.data.paging import Page, query_page
from edgecron.data.remembered import Remembered
from edgecron.domain.api_keys import LAST_USED_EVERY_MS, ApiKey, hash_of, key_id_of
from edgecron.domain.apps import App

KEY_PREFIX = "ek_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def to_entity(row: AppModel) -> App:
    quota = row.monthly_quota
    rate = row.requests_per_sec
    return App(
        app_id=row.app_id,
        name=row.name,
        created_at=int(row.created_at),
        monthly_quota=int(quota) if quota is not None else None,
        requests_per_sec=int(rate) if rate is not None else None,
        operational_subscriptions=frozenset(row.operational_subscriptions or ()),
    )


def create_app(name: str, now_ms: int, monthly_quota: int | None = None) -> tuple[App, str]:
    """Create an App with its first API key; the key is returned once and stored hashed."""
    row = AppModel(
        app_id=ids.new_id("app", now_ms), name=name, created_at=now_ms, monthly_quota=monthly_quota
    )
    row.save(condition=AppModel.app_id.does_not_exist())
    run_checks.cover_none(row.app_id)
    key = create_key(row.app_id, now_ms)
    return to_entity(row), key


def create_key(app_id: str, now_ms: int, name: str | None = None) -> str:
    """A new key of the App, stored hashed; the key itself is returned once and never again."""
    key, _ = new_key(app_id, now_ms, name)
    return key


def new_key(app_id: str, now_ms: int, name: str | None = None) -> tuple[str, ApiKey]:
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    row = ApiKeyModel(key_hash=hash_key(key), app_id=app_id, prefix=key[:7], created_at=now_ms, name=name)
    row.save(condition=ApiKeyModel.key_hash.does_not_exist())
    return key, key_entity(row)


def key_entity(row: ApiKeyModel) -> ApiKey:
    def num(value: Any) -> int | None:
        return None if value is None else int(value)

    return ApiKey(
        key_id=key_id_of(row.key_hash),
        app_id=row.app_id,
        prefix=row.prefix,
        created_at=int(row.created_at),
        name=row.name,
        last_used_at=num(row.last_used_at),
        expires_at=num(row.expires_at),
        replaced_by=row.replaced_by,
    )


def app_for_key(key: str) -> str | None:
    """The App id of a key that works now, or None. The lookup is by hash, so no comparison leaks
    timing. A key found is remembered by the container for KEY_REMEMBERED_MS (with the end of its
    grace period, if rotated), so a busy API reads each key a few times a minute instead of once per
    request; the read is strongly consistent, so no container remembers a key longer than
    KEY_REMEMBERED_MS after it was revoked: a revoke answers only after that (services/api_keys.py).
    A key not found is read again each time (it may have been created since). The key's last use is
    recorded when it is read, at most once a minute."""
    digest = hash_key(key)
    now_ms = clock.to_ms(clock.now())
    found = _KEY_APPS.get(digest, now_ms)
    if found is None:
        try:
            row = ApiKeyModel.get(digest, consistent_read=True)
        except DoesNotExist:
            return None
        found = key_entity(row)
        _KEY_APPS.put(digest, found, now_ms)
        if found.works_at(now_ms) and found.last_use_due(now_ms):
            _touch(row, now_ms)
    return found.app_id if found.works_at(now_ms) else None


def forget_key(key_id: str) -> None:
    """This container no longer remembers the key (it was revoked or rotated here)."""
    digest = hash_of(key_id)
    if digest is not None:
        _KEY_APPS.forget(digest)


def _touch(row: ApiKeyModel, now_ms: int) -> None:
    """Record a use; a concurrent request that recorded one first wins (nothing to do then)."""
    attr = ApiKeyModel.last_used_at
    fresh = attr.does_not_exist() | (attr <= now_ms - LAST_USED_EVERY_MS)
    update_if(row, [attr.set(now_ms)], ApiKeyModel.key_hash.exists() & fresh)


def get_key(app_id: str, key_id: str) -> ApiKey | None:
    """The App's key named by `key_id` (a strongly consistent read), or None."""
    digest = hash_of(key_id)
    if digest is None:
        return None
    try:
        row = ApiKeyModel.get(digest, consistent_read=True)
    except DoesNotExist:
        return None
    return key_entity(row) if row.app_id == app_id else None


def keys_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[ApiKey]:
    """The App's keys, newest first (rotated keys past their grace period are left out)."""
    now_s = clock.to_ms(clock.now()) // 1000
    exp = ApiKeyModel.expires_at
    page = query_page(
        ApiKeyModel,
        app_id,
        limit,
        cursor,
        index=ApiKeyModel.app_keys,
        filter_condition=exp.does_not_exist() | (exp > now_s),
    )
    return Page([key_entity(row) for row in page.items], page.last_key)


def expire_key(app_id: str, key_id: str, expires_at_s: int, replaced_by: str) -> ApiKey | None:
    """Give the key its end (rotation); None when it is not the App's, or is already expiring."""
    digest = hash_of(key_id)
    if digest is None:
        return None
    row = ApiKeyModel(key_hash=digest)
    condition = (ApiKeyModel.app_id == app_id) & ApiKeyModel.expires_at.does_not_exist()
    actions = [ApiKeyModel.expires_at.set(expires_at_s), ApiKeyModel.replaced_by.set(replaced_by)]
    return key_entity(row) if update_if(row, actions, condition) else None


def delete_key(app_id: str, key_id: str) -> bool:
    """Delete the App's key; False when there is none. Containers that remember it forget it within
    KEY_REMEMBERED_MS."""
    digest = hash_of(key_id)
    if digest is None:
        return False
    try:
        ApiKeyModel(key_hash=digest).delete(condition=ApiKeyModel.app_id == app_id)
    except DeleteError as exc:
        if condition_failed(exc):
            return False
        raise
    return True


def apps_page(limit: int, cursor: dict[str, Any] | None) -> Page[App]:
    """Every App, in no particular order, a page at a time (an operator's listing: a table scan)."""
    result = AppModel.scan(limit=limit, last_evaluated_key=cursor, page_size=limit)
    rows = list(result)
    last = result.last_evaluated_key if len(rows) >= limit else None
    return Page([to_entity(row) for row in rows], last or None)


# What the API remembers of an App's key and quota, and for how long.
KEY_REMEMBERED_MS = 10_000
REMEMBERED_MS = 30_000
_KEY_APPS: Remembered[ApiKey] = Remembered(max_age_ms=KEY_REMEMBERED_MS)  # key hash → its key
_QUOTAS: Remembered[App] = Remembered(max_age_ms=REMEMBERED_MS)  # App id → App


def app_for_quota(app_id: str) -> App | None:
    """The App as the quota check sees it: remembered for REMEMBERED_MS, so a quota set through
    another container applies within that time (this container's own `set_quota` at once)."""
    now_ms = clock.to_ms(clock.now())
    remembered = _QUOTAS.get(app_id, now_ms)
    if remembered is not None:
        return remembered
    app = get_app(app_id)
    if app is not None:
        _QUOTAS.put(app_id, app, now_ms)
    return app


def get_app(app_id: str) -> App | None:
    try:
        return to_entity(AppModel.get(app_id))
    except DoesNotExist:
        return None


def set_quota(app_id: str, monthly_quota: int | None) -> App | None:
    """Set or clear the App's quota; None when there is no such App (nothing is written)."""
    row = AppModel(app_id=app_id)
    action = (
        AppModel.monthly_quota.set(monthly_quota)
        if monthly_quota is not None
        else AppModel.monthly_quota.remove()
    )
    changed = update_if(row, [action], AppModel.app_id.exists())
    _QUOTAS.forget(app_id)  # this container's quota checks see the change at once
    return to_entity(row) if changed else None


def set_rate_limit(app_id: str, requests_per_sec: int | None) -> App | None:
    """Set or clear (back to the default) the App's request rate; None when there is no such App."""
    row = AppModel(app_id=app_id)
    action = (
        AppModel.requests_per_sec.set(requests_per_sec)
        if requests_per_sec is not None
        else AppModel.requests_per_sec.remove()
    )
    changed = update_if(row, [action], AppModel.app_id.exists())
    _QUOTAS.forget(app_id)  # this container's rate checks see the change at once
    return to_entity(row) if changed else None


def set_operational_subscriptions(app_id: str, names: frozenset[str]) -> None:
    """Which operational events the App's Endpoints subscribe to (what publishing checks first)."""
    row = AppModel(app_id=app_id)
    attr = AppModel.operational_subscriptions
    action = attr.set(sorted(names)) if names else attr.remove()
    update_if(row, [action], AppModel.app_id.exists())


@lru_cache(maxsize=8)
def _admin_key_hash(function: str, secret_arn: str) -> str:
    value = client("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"]
    return hash_key(str(value))


def is_admin_key(key: str, secret_arn: str) -> bool:
    """Compare hashes in constant time; the secret is read once per container."""
    if not secret_arn:
        return False
    return hmac.compare_digest(hash_key(key), _admin_key_hash(caller(), secret_arn))
