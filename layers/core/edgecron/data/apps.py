"""Apps and their API keys (stored only as SHA-256 hashes)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from functools import lru_cache

from pynamodb.exceptions import DoesNotExist

from edgecron import ids
from edgecron.data.aws import caller, client
from edgecron.data.models import ApiKeyModel, AppModel

KEY_PREFIX = "ek_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_app(name: str, now_ms: int, monthly_quota: int | None = None) -> tuple[AppModel, str]:
    """Create an App with its first API key; the key is returned once and stored hashed."""
    app = AppModel(
        app_id=ids.new_id("app", now_ms), name=name, created_at=now_ms, monthly_quota=monthly_quota
    )
    app.save(condition=AppModel.app_id.does_not_exist())
    key = create_key(app.app_id, now_ms)
    return app, key


def create_key(app_id: str, now_ms: int) -> str:
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    ApiKeyModel(key_hash=hash_key(key), app_id=app_id, prefix=key[:7], created_at=now_ms).save(
        condition=ApiKeyModel.key_hash.does_not_exist()
    )
    return key


def app_for_key(key: str) -> str | None:
    """The App id of a key, or None. The lookup is by hash, so no comparison leaks timing."""
    try:
        return str(ApiKeyModel.get(hash_key(key)).app_id)
    except DoesNotExist:
        return None


def get_app(app_id: str) -> AppModel | None:
    try:
        return AppModel.get(app_id)
    except DoesNotExist:
        return None


def set_quota(app_id: str, monthly_quota: int | None) -> AppModel:
    app = AppModel.get(app_id)
    app.update(
        actions=[
            AppModel.monthly_quota.set(monthly_quota)
            if monthly_quota is not None
            else AppModel.monthly_quota.remove()
        ]
    )
    return app


@lru_cache(maxsize=8)
def _admin_key_hash(function: str, secret_arn: str) -> str:
    value = client("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"]
    return hash_key(str(value))


def is_admin_key(key: str, secret_arn: str) -> bool:
    """Compare hashes in constant time; the secret is read once per container."""
    if not secret_arn:
        return False
    return hmac.compare_digest(hash_key(key), _admin_key_hash(caller(), secret_arn))
