"""When a history item counts as gone: DynamoDB deletes TTL-expired items lazily (up to days later,
and moto never does), so every read of history hides an item once its `expires_at` (epoch seconds,
the TTL attribute) has passed. `data.keys.alive` is the same rule as a read's filter."""

from __future__ import annotations


def is_alive(expires_at_s: float | None, now_ms: int) -> bool:
    return expires_at_s is None or expires_at_s > now_ms // 1000
