"""Entity → response model: Apps and their API keys."""

from __future__ import annotations

from edgecron.clock import iso_ms
from edgecron.domain.api_keys import ApiKey
from edgecron.domain.apps import App
from edgecron.schemas.apps import AppCreated, AppOut, KeyOut


def app_out(app: App) -> AppOut:
    return AppOut(
        id=app.app_id,
        name=app.name,
        monthly_quota=app.monthly_quota,
        created_at=iso_ms(app.created_at) or "",
    )


def app_created(app: App, api_key: str) -> AppCreated:
    return AppCreated(app=app_out(app), api_key=api_key)


def key_out(key: ApiKey) -> KeyOut:
    return KeyOut(
        id=key.key_id,
        prefix=key.prefix,
        name=key.name,
        state=key.state(),
        created_at=iso_ms(key.created_at) or "",
        last_used_at=iso_ms(key.last_used_at),
        expires_at=iso_ms(key.expires_at * 1000) if key.expires_at is not None else None,
        replaced_by=key.replaced_by,
    )
