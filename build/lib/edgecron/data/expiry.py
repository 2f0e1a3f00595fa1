"""TTL helpers: history items expire HISTORY_TTL_DAYS after their last activity; reads skip expired
ones (`domain.expiry.is_alive`), since DynamoDB deletes them lazily (and moto never does)."""

from __future__ import annotations

from edgecron.config import get_settings


def expires_at_s(now_ms: int) -> int:
    """The expiry of an item written at `now_ms`: the retention counts from then."""
    return now_ms // 1000 + get_settings().history_ttl_days * 86_400


def run_expires_at_s(now_ms: int, due_ms: int | None = None) -> int:
    """A Task Run's expiry after a write at `now_ms`: the retention counts from that write, or from
    the time the run is next due if that is later, so a delayed run never expires before it ran."""
    return expires_at_s(max(now_ms, due_ms or 0))
