"""App API keys for the operator (admin key): list, create, rotate with a grace period, revoke.
Every change is left as an App notification, so the App's owners see who holds which key when."""

from __future__ import annotations

from typing import Any

from edgecron import clock
from edgecron.clock import iso_ms
from edgecron.data import apps as data
from edgecron.data import notifications
from edgecron.data.paging import Page
from edgecron.domain.api_keys import ApiKey
from edgecron.domain.vocabulary import NotificationKind
from edgecron.errors import Conflict, NotFound


def _app(app_id: str) -> None:
    if data.get_app(app_id) is None:
        raise NotFound(f"app {app_id} not found", "app_id")


def _described(key: ApiKey) -> str:
    return f"{key.prefix}… ({key.name})" if key.name else f"{key.prefix}…"


def _note(key: ApiKey, kind: NotificationKind, title: str, message: str, now_ms: int, **extra: Any) -> None:
    data_fields = {"key_id": key.key_id, "prefix": key.prefix, "name": key.name, **extra}
    notifications.record(key.app_id, kind, title, message, data_fields, now_ms)


def _until_no_container_remembers(key_id: str) -> None:
    """Return once no API container can still accept the key from memory: each remembers a key it
    read for at most KEY_REMEMBERED_MS (strongly consistent reads), so waiting that long after the
    change makes every later request read the key as it now is."""
    data.forget_key(key_id)
    clock.sleep(data.KEY_REMEMBERED_MS / 1000)


def list_keys(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[ApiKey]:
    _app(app_id)
    return data.keys_page(app_id, limit, cursor)


def create(app_id: str, name: str | None, now_ms: int) -> tuple[ApiKey, str]:
    """A new key of the App; the key itself is in this answer only."""
    _app(app_id)
    secret, key = data.new_key(app_id, now_ms, name)
    _note(
        key,
        NotificationKind.API_KEY_CREATED,
        "API key created",
        f"API key {_described(key)} was created.",
        now_ms,
    )
    return key, secret


def rotate(app_id: str, key_id: str, grace_sec: int, now_ms: int) -> tuple[ApiKey, str, ApiKey | None]:
    """A new key replacing `key_id`, which keeps working for `grace_sec` (0: refused at once).
    Returns (the new key, its secret, the old key with its end; None when it was revoked at once)."""
    _app(app_id)
    old = data.get_key(app_id, key_id)
    if old is None:
        raise NotFound(f"API key {key_id} not found", "key_id")
    if old.expires_at is not None:
        raise Conflict(
            f"API key {key_id} is already being replaced (it stops working at "
            f"{iso_ms(old.expires_at * 1000)}): rotate its replacement, or revoke it",
            "key_id",
        )
    secret, new = data.new_key(app_id, now_ms, old.name)
    ended: ApiKey | None
    if grace_sec == 0:
        ended = None
        if not data.delete_key(app_id, key_id):  # revoked meanwhile: take the new key back
            data.delete_key(app_id, new.key_id)
            raise NotFound(f"API key {key_id} not found", "key_id")
    else:
        ended = data.expire_key(app_id, key_id, now_ms // 1000 + grace_sec, new.key_id)
        if ended is None:  # revoked or rotated meanwhile: take the new key back
            data.delete_key(app_id, new.key_id)
            raise Conflict(f"API key {key_id} changed meanwhile; list the keys and try again", "key_id")
    until = "at once" if ended is None else f"until {iso_ms((ended.expires_at or 0) * 1000)}"
    _note(
        old,
        NotificationKind.API_KEY_ROTATED,
        "API key rotated",
        f"API key {_described(old)} was replaced by {new.prefix}…; the old key works {until}.",
        now_ms,
        replaced_by=new.key_id,
        expires_at=None if ended is None else iso_ms((ended.expires_at or 0) * 1000),
    )
    if grace_sec * 1000 < data.KEY_REMEMBERED_MS:  # it ends sooner than a container forgets it
        _until_no_container_remembers(key_id)
    return new, secret, ended


def revoke(app_id: str, key_id: str, now_ms: int) -> ApiKey:
    """Delete the key; once this returns, every request that carries it is refused with 401."""
    _app(app_id)
    key = data.get_key(app_id, key_id)
    if key is None or not data.delete_key(app_id, key_id):
        raise NotFound(f"API key {key_id} not found", "key_id")
    _note(
        key,
        NotificationKind.API_KEY_REVOKED,
        "API key revoked",
        f"API key {_described(key)} was revoked.",
        now_ms,
    )
    _until_no_container_remembers(key_id)
    return key
