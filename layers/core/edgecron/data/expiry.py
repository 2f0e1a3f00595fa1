"""TTL helpers: history items expire after HISTORY_TTL_DAYS; reads skip expired ones, since DynamoDB
deletes them lazily (and moto never does)."""

from __future__ import annotations

from edgecron.config import get_settings


def expires_at_s(now_ms: int) -> int:
    return now_ms // 1000 + get_settings().history_ttl_days * 86_400


def is_alive(expires_at: float | None, now_ms: int) -> bool:
    return expires_at is None or expires_at > now_ms // 1000
