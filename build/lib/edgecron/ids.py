"""Prefixed, time-sortable identifiers, and deterministic ones for idempotent fan-out."""

from __future__ import annotations

import hashlib
import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32, as ULID


def _b32(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def ulid(ms: int | None = None) -> str:
    """A 26-character ULID: 48 bits of milliseconds then 80 random bits (sorts by creation time)."""
    ms = int(time.time() * 1000) if ms is None else ms
    return _b32(ms, 10) + _b32(int.from_bytes(os.urandom(10), "big"), 16)


def new_id(prefix: str, ms: int | None = None) -> str:
    return f"{prefix}_{ulid(ms)}"


def _time_prefix(body: str) -> int | None:
    if len(body) < 10 or any(c not in _ALPHABET for c in body[:10]):
        return None
    value = 0
    for c in body[:10]:
        value = value * 32 + _ALPHABET.index(c)
    return value


def ms_of(object_id: str) -> int | None:
    """The creation time of a time-sortable id (new_id, keyed_id); None for any other string."""
    body = object_id.partition("_")[2]
    return _time_prefix(body) if len(body) == 26 else None


def floor_ms(key: str) -> int:
    """The milliseconds a time-sortable id or a time_floor starts with (0 for any other string):
    every id that sorts after `key` was created at this time or later."""
    return _time_prefix(key.partition("_")[2]) or 0


def time_floor(prefix: str, ms: int) -> str:
    """Sorts before every time-sortable id with `prefix` created at `ms` or later, after every
    earlier one."""
    return f"{prefix}_{_b32(ms, 10)}"


def shard_of(key: str, shards: int) -> str:
    """A stable shard number (as the string GSI partition key) for a key."""
    return str(int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), "big") % shards)


def keyed_id(prefix: str, ms: int, *parts: str) -> str:
    """Time-sortable like new_id, but the same (ms, parts) always give the same id, so a create
    retried under one Idempotency-Key finds the object an earlier attempt made instead of a twin."""
    digest = hashlib.sha256("|".join(parts).encode()).digest()
    return f"{prefix}_{_b32(ms, 10)}{_b32(int.from_bytes(digest[:10], 'big'), 16)}"
