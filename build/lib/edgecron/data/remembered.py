"""What a container remembers between calls of what it read or wrote: an App's key, its quota, its
cover. Entries are kept per caller (each function has its own role and must not reuse what another
was allowed to read), at most `max_entries` of them, the oldest leaving first; with `max_age_ms`, an
entry is forgotten that long after it was remembered, so a change made elsewhere applies within it."""

from __future__ import annotations

import threading

from edgecron.data.aws import caller

MAX_ENTRIES = 1024  # a bound on memory, not a policy


class Remembered[V]:
    """A bounded, thread-safe memory of values by key, per caller."""

    def __init__(self, max_age_ms: int | None = None, max_entries: int = MAX_ENTRIES) -> None:
        self.max_age_ms = max_age_ms
        self.max_entries = max_entries
        self._entries: dict[tuple[str, str], tuple[int, V]] = {}  # (caller, key) → (remembered at, value)
        self._lock = threading.Lock()

    def get(self, key: str, now_ms: int) -> V | None:
        """The value remembered for `key` by this caller, unless it is older than `max_age_ms`
        (or remembered after `now_ms`: a clock that went back cannot keep an entry alive)."""
        entry = self._entries.get((caller(), key))
        if entry is None:
            return None
        if self.max_age_ms is not None and not 0 <= now_ms - entry[0] < self.max_age_ms:
            return None
        return entry[1]

    def put(self, key: str, value: V, now_ms: int) -> None:
        scoped = (caller(), key)
        with self._lock:
            self._entries.pop(scoped, None)
            while self._entries and len(self._entries) >= self.max_entries:
                self._entries.pop(next(iter(self._entries)))
            self._entries[scoped] = (now_ms, value)

    def forget(self, key: str) -> None:
        """Forget `key` for every caller (this container changed what it names)."""
        with self._lock:
            for scoped in [k for k in self._entries if k[1] == key]:
                del self._entries[scoped]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
