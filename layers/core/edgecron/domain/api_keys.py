"""An App API key as the operator sees it: never the key itself (shown once, when it is made), only
its id, its first characters, when it was made and last used, and, once it has been rotated, when
it stops working.

Pure module: the current time is a parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

#: How long a rotated key keeps working by default (the caller may choose 0 s to 30 days).
DEFAULT_GRACE_SEC: Final = 24 * 3600
MAX_GRACE_SEC: Final = 30 * 24 * 3600
#: `last_used_at` is recorded at most once per this interval per key (a write per request would
#: cost more than the request), when a container reads the key: it is the last use to about a minute.
LAST_USED_EVERY_MS: Final = 60_000
ID_PREFIX: Final = "key_"

KeyState = Literal["active", "expiring"]


def key_id_of(key_hash: str) -> str:
    """A key's id: its stored hash (SHA-256, hex), which names the key without revealing it."""
    return ID_PREFIX + key_hash


def hash_of(key_id: str) -> str | None:
    """The stored hash a key id names, or None for a string that is no key id."""
    if not key_id.startswith(ID_PREFIX):
        return None
    digest = key_id[len(ID_PREFIX) :]
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        return None
    return digest


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    app_id: str
    prefix: str  # the key's first characters, to recognise it
    created_at: int  # epoch ms
    name: str | None = None
    last_used_at: int | None = None  # epoch ms, to within LAST_USED_EVERY_MS
    expires_at: int | None = None  # epoch s: a rotated key works until then
    replaced_by: str | None = None  # the key id of its replacement

    def works_at(self, now_ms: int) -> bool:
        return self.expires_at is None or now_ms < self.expires_at * 1000

    def state(self) -> KeyState:
        return "active" if self.expires_at is None else "expiring"

    def last_use_due(self, now_ms: int) -> bool:
        """Whether a use at `now_ms` should be recorded (the recorded one is a minute old or more)."""
        return self.last_used_at is None or now_ms - self.last_used_at >= LAST_USED_EVERY_MS
