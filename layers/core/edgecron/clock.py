"""An injectable clock, so cron, catch-up and retry behaviour is tested without sleeping."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    """Wall-clock UTC time."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, value: datetime) -> None:
        with self._lock:
            self._now = value

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


class ShiftedClock:
    """Real time moved by a fixed offset: time flows, but starts where a test wants it."""

    def __init__(self, start: datetime) -> None:
        self._offset = start - datetime.now(UTC)

    def now(self) -> datetime:
        return datetime.now(UTC) + self._offset


_clock: Clock = SystemClock()


def set_clock(clock: Clock) -> None:
    """Replace the process clock (tests only)."""
    global _clock
    _clock = clock


def now() -> datetime:
    return _clock.now()


def to_ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def from_ms(value: int | float) -> datetime:
    return datetime.fromtimestamp(value / 1000, UTC)


def iso(value: datetime | None) -> str | None:
    """RFC 3339 UTC with millisecond precision, or None."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_ms(value: int | float | None) -> str | None:
    return None if value is None else iso(from_ms(value))


def monotonic() -> float:
    return time.monotonic()


def sleep(seconds: float) -> None:
    """Wait `seconds` on the process clock: a FixedClock moves on at once instead of waiting."""
    if isinstance(_clock, FixedClock):
        _clock.advance(seconds)
    else:
        time.sleep(seconds)
