"""Where the scan's due index holds a schedule (its `due_slot`), and which slots a tick reads.

An entry keyed by the exact next fire time moves at every fire: two index writes, a third of what a
fire writes. A schedule that fires at one time of the day, or at one time of the hour, keeps one
position instead, on a wheel of that period: the scan reads the positions that come up during its
window (from where the last tick got to its look-ahead horizon) and keeps the schedules
whose stored next fire time is due. A schedule that fires many times a day every day is read at every
tick. Any other schedule (a one-time one, a monthly one, one firing a few times a day) keeps the exact
next fire time, which every tick reads up to its horizon, as lagging ones are too.

Keys are numbers in disjoint ranges: exact ones are epoch milliseconds (> 0), the every-tick key is 0
(so one query reads both), and the wheels lie below 0. Pure module: no I/O, no clock."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from edgecron.domain.cron import CronSpec

DAY_MS: Final = 86_400_000
HOUR_MS: Final = 3_600_000
MINUTE_MS: Final = 60_000

#: A schedule read at every tick must fire at least this often a day (at most 8 reads per fire).
EVERY_TICK_MIN_PER_DAY: Final = 1440 // 8
#: A schedule on the hour wheel must fire in at least this many hours a day (at most 8 reads per fire).
HOUR_WHEEL_MIN_HOURS: Final = 24 // 8


class Wheel(StrEnum):
    EXACT = "exact"  # keyed by the next fire time itself; moves at every fire
    DAY = "day"  # one time of day: keyed by it (UTC), still while the zone's offset holds
    HOUR = "hour"  # one time of the hour in several hours a day: keyed by it
    TICK = "tick"  # many fires a day, every day: one key, read at every tick


_DAY_BASE: Final = -300_000_000  # [-300_000_000, -213_600_000): milliseconds of the UTC day
_HOUR_BASE: Final = -200_000_000  # [-200_000_000, -196_400_000): milliseconds of the hour
TICK_SLOT: Final = 0
_BASE: Final = {Wheel.DAY: _DAY_BASE, Wheel.HOUR: _HOUR_BASE}
_PERIOD: Final = {Wheel.DAY: DAY_MS, Wheel.HOUR: HOUR_MS}


def wheel_of(spec: CronSpec | None) -> Wheel:
    """The wheel a schedule's cron expression keeps its entry on (EXACT for a one-time schedule).
    It depends on the expression alone, never on the time, so every write agrees on it."""
    if spec is None:
        return Wheel.EXACT
    from edgecron.domain.cron import fire_shape  # loaded already: the spec was parsed by it

    shape = fire_shape(spec)
    if not shape.every_month_day:
        return Wheel.EXACT  # a few days a month or a year: reading it daily would cost more than moving it
    if shape.per_day >= EVERY_TICK_MIN_PER_DAY:
        return Wheel.TICK
    if shape.seconds == 1 and shape.minutes == 1:
        if shape.hours == 1:
            return Wheel.DAY
        if shape.hours >= HOUR_WHEEL_MIN_HOURS:
            return Wheel.HOUR
    return Wheel.EXACT


def slot_of(
    wheel: Wheel, next_fire_ms: int, written_ms: int, settled_ms: int, *, walked_to: int | None = None
) -> int:
    """The key of a schedule whose next fire is `next_fire_ms`, written at `written_ms`.

    A day or hour wheel position is read once the scan's window passes it, and that window starts
    where the last tick got, which may already lie up to `settled_ms` (the
    look-ahead, and a margin for clocks) after the write. A next fire that close keeps the exact key
    for that one fire: every tick reads exact keys up to its horizon. The scan's advance puts it on
    the wheel. The every-tick key is read by every tick, but the walk takes a schedule there as
    done with every fire up to where the last tick got (its mark), so a next fire at or before the
    mark keeps the exact key: from a write outside the walk, any fire within `settled_ms`; from the
    walk's own write (`walked_to`: the mark its tick started from, which it moves only once its
    fires are sent), a fire not after that mark, as a catch-up behind it leaves, so a tick that dies
    there leaves the fire read as owed, not as passed. An every-tick schedule whose next fire is more
    than a day away (a far start_at, a week's gap) keeps the exact key until then, rather than being
    read at every tick meanwhile."""
    if wheel == Wheel.TICK:
        behind = next_fire_ms <= (written_ms + settled_ms if walked_to is None else walked_to)
        if next_fire_ms > written_ms + DAY_MS or behind:
            return next_fire_ms
        return TICK_SLOT
    if wheel == Wheel.EXACT or next_fire_ms <= written_ms + settled_ms:
        return next_fire_ms
    return _BASE[wheel] + next_fire_ms % _PERIOD[wheel]


def is_exact(slot: int) -> bool:
    return slot > TICK_SLOT


def walk_moves(slot: int | None) -> bool:
    """Whether the scan's due walk, rather than a write, moves a schedule with this entry past its
    fires: a day or hour wheel position, which the walk's window passes, or the every-tick key,
    which every tick reads. Never an exact time: that entry moves with each fire."""
    return slot is not None and slot <= TICK_SLOT


def window_ranges(from_ms: int, until_ms: int) -> list[tuple[int, int]]:
    """The key ranges (inclusive) a tick reads for fire times in (`from_ms`, `until_ms`]: the tick key
    and every exact key up to `until_ms` (the lagging ones too), then the positions of each wheel the
    window passes, each range in the order the window meets its positions (a whole wheel when the
    window spans a period, split where the window starts)."""
    ranges = [(TICK_SLOT, until_ms)]
    for wheel in (Wheel.HOUR, Wheel.DAY):
        period, base = _PERIOD[wheel], _BASE[wheel]
        if until_ms <= from_ms:
            continue
        lo = (from_ms + 1) % period
        hi = (lo - 1) % period if until_ms - from_ms >= period else until_ms % period
        if lo <= hi:
            ranges.append((base + lo, base + hi))
        else:  # the window passes the wheel's zero
            ranges += [(base + lo, base + period - 1), (base, base + hi)]
    return ranges


def met_at(slot: int, from_ms: int) -> int | None:
    """When a window starting after `from_ms` meets a wheel slot: the first time after `from_ms`
    whose position on the wheel is the slot. None for the exact and every-tick keys, which every tick
    reads whatever its window. A walk in this order lets a tick that stops early say how far it got."""
    for wheel in (Wheel.HOUR, Wheel.DAY):
        base, period = _BASE[wheel], _PERIOD[wheel]
        if base <= slot < base + period:
            return from_ms + 1 + (slot - base - (from_ms + 1)) % period
    return None
