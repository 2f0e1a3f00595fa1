"""Apps and their API keys (stored only as SHA-256 hashes). Reads return `App` entities."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from functools import lru_cache

from pynamodb.exceptions import DoesNotExist

from edgecron import clock, ids
from edgecron.data import run_checks
from edgecron.data.aws import caller, client
from edgecron.data.conditional import update_if
from edgecron.data.models import ApiKeyModel, AppModel
from edgecron.data.remembered import Remembered
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


def create_key(app_id: str, now_ms: int) -> str:
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    ApiKeyModel(key_hash=hash_key(key), app_id=app_id, prefix=key[:7], created_at=now_ms).save(
        condition=ApiKeyModel.key_hash.does_not_exist()
    )
    return key


def app_for_key(key: str) -> str | None:
    """The App id of a key, or None. The lookup is by hash, so no comparison leaks timing.
    A key found is remembered by the container for REMEMBERED_MS, so a busy API reads each key about
    twice a minute instead of once per request; a key deleted by hand from the table is refused within
    that time. A key not found is read again each time (it may have been created since)."""
    digest = hash_key(key)
    now_ms = clock.to_ms(clock.now())
    remembered = _KEY_APPS.get(digest, now_ms)
    if remembered is not None:
        return remembered
    try:
        app_id = str(ApiKeyModel.get(digest).app_id)
    except DoesNotExist:
        return None
    _KEY_APPS.put(digest, app_id, now_ms)
    return app_id


# What the API remembers of a key's App and an App's quota, and for how long.
REMEMBERED_MS = 30_000
_KEY_APPS: Remembered[str] = Remembered(max_age_ms=REMEMBERED_MS)  # key hash → App id
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
