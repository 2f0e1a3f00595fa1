"""Cron math for EdgeCron schedules: parsing, next/previous fire times, counting.

Pure module: no I/O, no clock. Every function takes its reference instants as arguments; instants in
and out are timezone-aware datetimes, results are UTC with whole-second precision.

Syntax
------
* 5 fields ``minute hour day-of-month month day-of-week``, or 6 fields with **seconds first**
  ``second minute hour day-of-month month day-of-week`` (Quartz/Spring order).  A 5-field
  expression fires at second 0.
* Values, lists ``1,5``, ranges ``1-5`` (a reversed range wraps: ``FRI-MON``), steps ``*/15``,
  ``10/5``, ``1-30/7``; names ``JAN``-``DEC`` and ``SUN``-``SAT`` (any case).
  Day-of-week numbers are the Unix/Spring ones: 0 or 7 = Sunday, 1 = Monday ... 6 = Saturday
  (NOT Quartz's 1 = Sunday).
* Extensions accepted because croniter implements them: ``?`` (= ``*``, day fields only),
  ``L`` in day-of-month (last day of the month), ``15W`` (weekday nearest the 15th),
  ``5#3`` (third Friday) and ``L5`` (last Friday) in day-of-week.
* Aliases ``@yearly @annually @monthly @weekly @daily @midnight @hourly``.
* When both day-of-month and day-of-week are restricted, a day matches if EITHER matches
  (Vixie-cron semantics); use ``?`` or ``*`` in one of them to mean "only the other".
* Rejected with a message: ``H``/``R`` (hashed/random), Quartz ``5L``, ``LW``, ``L-3``, a 7th
  (year) field, ``@reboot``, and expressions that never fire (``0 0 30 2 *``).
* EventBridge Scheduler expressions ``cron(...)``, ``rate(...)`` and ``at(...)`` are read through
  their translation (:mod:`edgecron.domain.eventbridge`): a cron expression above, and for a
  ``cron(...)`` with a year or an ``at(...)``, the years it is limited to (``CronSpec.years``, in the
  schedule's zone: no fire before January 1 of the first or from January 1 after the last).

The DST rule (enforced here, not by croniter)
---------------------------------------------
Matching is done on the local wall clock of the schedule's IANA zone.

* A schedule is **frequent** when its hour field is ``*`` (every hour; ``0-23`` and ``*/1`` are the
  same).  A frequent schedule follows real elapsed time: it fires at every real instant whose
  local wall-clock reading matches the expression.  Wall times skipped by a spring-forward gap
  do not exist, so they do not fire; wall times repeated by an autumn fall-back fire twice,
  once in each occurrence (``*/15 * * * *`` keeps firing every 15 real minutes through both
  transitions; ``0 * * * *`` fires every real hour in New York on both days).
* Any other schedule (a specific hour, a list, a range or a step such as ``*/2``) is a
  **fixed-time** schedule: each matching wall time fires exactly once.  A wall time that falls
  in a spring-forward gap fires once at the first instant after the gap (New York 02:30 on the
  spring day fires at 03:00:00 EDT); a wall time in the repeated autumn interval fires at its
  first occurrence only.  Several wall times that map to the same instant fire once.
* The result never contains two fires at the same instant and is strictly increasing.

Transitions are found by probing ``utcoffset`` in steps of one day, which assumes a zone never
has two offset changes within 24 hours (true of every current tzdata zone).
"""

from __future__ import annotations

import calendar
import copy
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from croniter import (
    CroniterBadDateError,
    croniter,
)

from edgecron.domain import eventbridge

__all__ = [
    "AT_GRACE",
    "MAX_PREVIEW",
    "CronError",
    "CronSpec",
    "FireShape",
    "check_not_over",
    "check_steps",
    "check_zone_name",
    "count_fires_between",
    "equivalent",
    "fire_shape",
    "fires_between",
    "is_frequent",
    "latest_fires_between",
    "next_fire",
    "next_fires",
    "parse_cron",
    "prev_fire",
    "to_epoch_seconds",
    "validate_at",
]

#: A one-time ``at`` may lie at most this far in the past when it is created or changed.
AT_GRACE: Final = timedelta(seconds=5)
#: ``next_fires`` returns at most this many fire times.
MAX_PREVIEW: Final = 20

_DAY: Final = 86_400
_STEP: Final = _DAY  # transition probe step
_FOLD_MAX: Final = 26 * 3_600  # longest backward jump we look for (covers date-line moves)
_MAX_YEARS: Final = 9  # croniter search horizon between two matches (Feb 29 across 2100 is 8)
_VALIDATION_START: Final = float((datetime(2024, 1, 1) - datetime(1970, 1, 1)).days * _DAY)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ORDINAL_1970: Final = date(1970, 1, 1).toordinal()
_FAST_SCAN: Final = 62  # days scanned one by one before asking croniter to jump

_FIELDS_5: Final = ("minute", "hour", "day-of-month", "month", "day-of-week")
_FIELDS_6: Final = ("second", *_FIELDS_5)
#: How many values each field has: a step larger than that can never reach a second value, so it
#: is a typo (``*/1000``, ``0-59/61``), not a schedule.
_FIELD_SIZE: Final = {
    "second": 60,
    "minute": 60,
    "hour": 24,
    "day-of-month": 31,
    "month": 12,
    "day-of-week": 7,
}
_ALIASES: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_ALLOWED_CHARS: Final = re.compile(r"^[0-9A-Za-z*/,\-?#@ \t]+$")
_HASH_RANDOM: Final = re.compile(r"^[hr](\(|/|$)", re.IGNORECASE)
_QUARTZ_LAST_DOW: Final = re.compile(r"^(\d+|[a-z]{3})l$", re.IGNORECASE)


class CronError(ValueError):
    """A schedule definition is invalid. ``field`` is ``"cron"``, ``"timezone"`` or ``"at"``."""

    def __init__(self, message: str, field: str = "cron") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class CronSpec:
    """A validated cron schedule. Build it with :func:`parse_cron`.

    ``expression`` is the user's expression with whitespace normalised (seconds first when it
    has 6 fields); ``has_seconds`` tells whether it has a seconds field. For an EventBridge
    expression, ``expression`` is its translation, ``given`` the expression as written and ``years``
    the years it is limited to (first, last), if any.
    """

    expression: str
    timezone: str
    has_seconds: bool
    years: tuple[int, int] | None = None
    given: str | None = None


# --------------------------------------------------------------------------------------------
# Compilation (parsing + validation), cached per (expression, timezone)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Compiled:
    zone: ZoneInfo
    frequent: bool
    has_seconds: bool
    hours: tuple[int, ...]
    minutes: tuple[int, ...]
    seconds: tuple[int, ...]
    hour_set: frozenset[int]
    minute_set: frozenset[int]
    per_day: int  # matching wall times in one matching day
    all_days: bool  # every calendar day matches
    day_sets: _DaySets | None  # fast day matcher; None when W or # needs croniter
    day_cron: Any  # croniter "0 0 <dom> <month> <dow>" template (copy before use)


@dataclass(frozen=True)
class _DaySets:
    """Day-level match for plain fields, mirroring croniter: month AND (dom OR dow when both
    are restricted, else whichever is restricted)."""

    months: frozenset[int] | None
    doms: frozenset[int] | None
    last_dom: bool
    dows: frozenset[int] | None  # 0 = Sunday

    def match(self, day: int) -> bool:
        d = date.fromordinal(day + _ORDINAL_1970)
        if self.months is not None and d.month not in self.months:
            return False
        dom_ok = None
        if self.doms is not None:
            dom_ok = d.day in self.doms or (
                self.last_dom and d.day == calendar.monthrange(d.year, d.month)[1]
            )
        dow_ok = None if self.dows is None else d.isoweekday() % 7 in self.dows
        if dom_ok is None:
            return dow_ok is None or dow_ok
        if dow_ok is None:
            return dom_ok
        return dom_ok or dow_ok


def _split(expression: str) -> tuple[str, list[str]]:
    if not isinstance(expression, str):
        raise CronError("cron expression must be a string")
    text = expression.strip(" \t")
    if not text:
        raise CronError("cron expression is empty")
    if not _ALLOWED_CHARS.match(text):
        bad = next(ch for ch in text if not _ALLOWED_CHARS.match(ch))
        raise CronError(f"cron expression contains an invalid character {bad!r}")
    fields = re.split(r"[ \t]+", text)
    if fields[0].startswith("@"):
        if len(fields) != 1:
            raise CronError(f"alias {fields[0]!r} must be the whole expression")
        alias = fields[0].lower()
        if alias not in _ALIASES:
            raise CronError(f"unknown alias {fields[0]!r}; supported: {', '.join(sorted(_ALIASES))}")
        return alias, _ALIASES[alias].split(" ")
    if len(fields) not in (5, 6):
        raise CronError(
            f"cron expression has {len(fields)} fields; expected 5 "
            "(minute hour day-of-month month day-of-week) or 6 with seconds first "
            "(second minute hour day-of-month month day-of-week)"
        )
    return " ".join(fields), fields


def _precheck(fields: list[str]) -> None:
    names = _FIELDS_6 if len(fields) == 6 else _FIELDS_5
    for name, value in zip(names, fields, strict=True):
        for element in value.split(","):
            if element == "":
                raise CronError(f"{name} field {value!r} has an empty list element")
            if _HASH_RANDOM.match(element):
                raise CronError(f"{name} field {value!r}: H (hashed) and R (random) values are not supported")
            low = element.lower()
            if name == "day-of-week" and _QUARTZ_LAST_DOW.match(low):
                raise CronError(
                    f"day-of-week field {value!r}: Quartz 'nL' is not supported; "
                    "write the last weekday of the month as 'Ln' (e.g. L5 = last Friday)"
                )
            if name == "day-of-month" and (low == "lw" or low.startswith("l-")):
                raise CronError(
                    f"day-of-month field {value!r}: 'LW' and 'L-n' are not supported "
                    "(supported: L = last day, nW = weekday nearest day n)"
                )
            if "#" in element and name != "day-of-week":
                raise CronError(f"{name} field {value!r}: '#' is only allowed in day-of-week")
            if "l" in low and name in ("second", "minute", "hour"):
                raise CronError(f"{name} field {value!r}: 'L' is only allowed in day fields")


def _new_croniter(expr: str) -> Any:
    return croniter(expr, 0.0, max_years_between_matches=_MAX_YEARS)


def _croniter_expr(fields: list[str]) -> str:
    if len(fields) == 6:  # croniter wants seconds LAST
        return " ".join([*fields[1:], fields[0]])
    return " ".join(fields)


_ALLOWED: Final = {
    "second": "0-59",
    "minute": "0-59",
    "hour": "0-23",
    "day-of-month": "1-31, L, nW, ?",
    "month": "1-12 or JAN-DEC",
    "day-of-week": "0-7 (0 and 7 = Sunday) or SUN-SAT, n#k, Ln, ?",
}


def _explain_invalid(fields: list[str], exc: Exception) -> CronError:
    names = _FIELDS_6 if len(fields) == 6 else _FIELDS_5
    for index, (name, value) in enumerate(zip(names, fields, strict=True)):
        probe = ["*"] * len(fields)
        probe[index] = value
        try:
            _new_croniter(_croniter_expr(probe))
        except Exception:  # croniter raises assorted exception types
            return CronError(
                f"invalid {name} field {value!r}: use {_ALLOWED[name]}, "
                "with lists (a,b), ranges (a-b) and steps (*/n, a-b/n)"
            )
    detail = re.sub(r"\[[^\]]*\]\s*", "", str(exc)).strip() or type(exc).__name__
    return CronError(f"invalid cron expression: {detail}")


def _full(values: list[Any], low: int, high: int) -> tuple[int, ...]:
    if values == ["*"]:
        return tuple(range(low, high + 1))
    return tuple(sorted({int(v) for v in values}))


@lru_cache(maxsize=1024)
def _compile(expression: str, timezone: str) -> _Compiled:
    _, fields = _split(expression)
    _precheck(fields)
    try:
        cron = _new_croniter(_croniter_expr(fields))
    except Exception as exc:  # croniter raises ValueError, KeyError, TypeError...
        raise _explain_invalid(fields, exc) from exc
    day_fields = fields[-3:]
    try:
        day_cron = _new_croniter("0 0 " + " ".join(day_fields))
    except Exception as exc:
        raise _explain_invalid(fields, exc) from exc
    if _cron_step(copy.copy(day_cron), _VALIDATION_START, forward=True) is None:
        raise CronError(f"cron expression {expression!r} never fires (no matching day)")

    zone = _load_zone(timezone)
    expanded: list[list[Any]] = cron.expanded
    has_seconds = len(fields) == 6
    minutes = _full(expanded[0], 0, 59)
    hours = _full(expanded[1], 0, 23)
    seconds = _full(expanded[5], 0, 59) if has_seconds else (0,)
    all_days = (
        expanded[2] == ["*"]
        and expanded[3] == ["*"]
        and expanded[4] == ["*"]
        and not cron.nth_weekday_of_month
        and not cron.nearest_weekday
    )
    day_sets = None
    if not cron.nth_weekday_of_month and not cron.nearest_weekday:
        doms = expanded[2]
        day_sets = _DaySets(
            months=None if expanded[3] == ["*"] else frozenset(int(v) for v in expanded[3]),
            doms=None if doms == ["*"] else frozenset(int(v) for v in doms if v != "l"),
            last_dom="l" in doms,
            dows=None if expanded[4] == ["*"] else frozenset(int(v) % 7 for v in expanded[4]),
        )
    return _Compiled(
        zone=zone,
        frequent=expanded[1] == ["*"],
        has_seconds=has_seconds,
        hours=hours,
        minutes=minutes,
        seconds=seconds,
        hour_set=frozenset(hours),
        minute_set=frozenset(minutes),
        per_day=len(hours) * len(minutes) * len(seconds),
        all_days=all_days,
        day_sets=day_sets,
        day_cron=day_cron,
    )


#: Files in the zone database that are not zones a person would name: the host's own zone, a
#: placeholder and a template, and the duplicate posix/ and right/ (leap-second) trees.
_NOT_ZONES: Final = frozenset({"localtime", "Factory", "posixrules"})


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    names = {
        n for n in available_timezones() if n not in _NOT_ZONES and not n.startswith(("posix/", "right/"))
    }
    return frozenset(names | {"UTC"})


def _load_zone(timezone: str) -> ZoneInfo:
    if not isinstance(timezone, str) or not timezone.strip():
        raise CronError("timezone must be an IANA zone name such as 'Europe/Berlin'", "timezone")
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise CronError(f"unknown timezone {timezone!r} (use an IANA name)", "timezone") from exc


def check_zone_name(timezone: str) -> str:
    """A zone a schedule may be given: a name of the IANA zone database or "UTC", so a schedule
    means the same on every host. Applied where definitions are accepted (the API), not to stored
    ones, which keep computing as they did. Raises :class:`CronError` (``field="timezone"``)."""
    if not isinstance(timezone, str) or timezone not in _zone_names():
        raise CronError(
            f"unknown timezone {timezone!r} (use an IANA name such as 'Europe/Berlin')", "timezone"
        )
    return timezone


def check_steps(expression: str) -> str:
    """A cron expression a schedule may be given: no step larger than its field's range
    (``*/1000`` seconds, ``0-59/61`` minutes are typos). Applied where definitions are accepted,
    like :func:`check_zone_name`. Raises :class:`CronError` (``field="cron"``)."""
    translation = _translate(expression)
    _, fields = _split(translation.cron if translation else expression)
    names = _FIELDS_6 if len(fields) == 6 else _FIELDS_5
    for name, value in zip(names, fields, strict=True):
        for element in value.split(","):
            step = element.rpartition("/")[2] if "/" in element else ""
            if step.isdigit() and int(step) > _FIELD_SIZE[name]:
                raise CronError(
                    f"{name} field {value!r}: step {int(step)} is larger than the field's range "
                    f"({_FIELD_SIZE[name]} values)"
                )
    return expression


def _translate(expression: str) -> eventbridge.Translation | None:
    try:
        return eventbridge.translate(expression)
    except eventbridge.EventBridgeError as exc:
        raise CronError(str(exc)) from None


def equivalent(expression: str | None) -> str | None:
    """What an EventBridge expression runs as, for people (``"0 9 * * MON-FRI"``,
    ``"0 0 9 1 1 * (year 2027)"``); None for any other expression, or one that cannot be read."""
    if expression is None:
        return None
    try:
        translation = _translate(expression)
    except CronError:
        return None
    return translation.shown if translation else None


def parse_cron(expression: str, timezone: str = "UTC") -> CronSpec:
    """Validate ``expression`` in ``timezone`` and return its :class:`CronSpec`.

    Raises :class:`CronError` (``field="cron"`` or ``"timezone"``) with a readable message.
    """
    translation = _translate(expression)
    if translation is None:
        normalised, fields = _split(expression)
        spec = CronSpec(expression=normalised, timezone=timezone, has_seconds=len(fields) == 6)
        _compile(spec.expression, spec.timezone)
        return spec
    normalised, fields = _split(translation.cron)
    spec = CronSpec(
        expression=normalised,
        timezone=timezone,
        has_seconds=len(fields) == 6,
        years=translation.years,
        given=expression.strip(),
    )
    try:
        _compile(spec.expression, spec.timezone)
    except CronError as exc:
        if exc.field != "cron":
            raise
        raise CronError(f"{spec.given}: {exc.message}") from None
    return spec


def check_not_over(spec: CronSpec, now: datetime) -> None:
    """A schedule being created or edited must have a fire time left: an ``at(...)`` or a
    ``cron(...)`` year that has passed is refused. Raises :class:`CronError` (``field="cron"``)."""
    if spec.years is None or next_fire(spec, now) is not None:
        return
    first, last = spec.years
    years = str(first) if first == last else f"{first}-{last}"
    raise CronError(
        f"{spec.given or spec.expression} has no fire time left after "
        f"{now.astimezone(UTC).isoformat()}: its time in {years} has passed"
    )


@dataclass(frozen=True)
class FireShape:
    """How a cron expression's fires fall within a day: how many seconds, minutes and hours of the
    wall clock match, and whether every day of every month can match (the day-of-week may still be
    restricted). The scan's due index places a schedule by this shape (domain/due_slots.py)."""

    seconds: int
    minutes: int
    hours: int
    every_month_day: bool

    @property
    def per_day(self) -> int:
        """Fires on a matching day (outside daylight-saving changes)."""
        return self.seconds * self.minutes * self.hours


def fire_shape(spec: CronSpec) -> FireShape:
    p = _compile(spec.expression, spec.timezone)
    days = p.day_sets
    every_day = days is not None and days.months is None and days.doms is None and not days.last_dom
    return FireShape(
        seconds=len(p.seconds),
        minutes=len(p.minutes),
        hours=len(p.hours),
        every_month_day=every_day and spec.years is None,  # a few years: not every year
    )


def is_frequent(spec: CronSpec) -> bool:
    """True when the schedule runs every hour or more often (hour field ``*``): real-time rule."""
    return _compile(spec.expression, spec.timezone).frequent


# --------------------------------------------------------------------------------------------
# Time conversion helpers (instants are int epoch seconds inside this module)
# --------------------------------------------------------------------------------------------


def _require_aware(value: datetime, name: str) -> None:
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware")


def to_epoch_seconds(value: datetime) -> int:
    """Floor of ``value`` in epoch seconds (``value`` must be aware)."""
    _require_aware(value, "value")
    return (value - _EPOCH) // timedelta(seconds=1)


def _ceil_seconds(value: datetime) -> int:
    floor = to_epoch_seconds(value)
    return floor + 1 if value.microsecond else floor


def _to_dt(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _offset(zone: ZoneInfo, ts: int) -> int:
    delta = datetime.fromtimestamp(ts, zone).utcoffset()
    assert delta is not None
    return delta.days * _DAY + delta.seconds


def _next_transition(zone: ZoneInfo, lo: int, hi: int) -> int | None:
    """The first instant T with lo < T <= hi where the offset differs from the offset at lo."""
    base = _offset(zone, lo)
    a = lo
    while a < hi:
        b = min(a + _STEP, hi)
        if _offset(zone, b) != base:
            while b - a > 1:
                mid = (a + b) // 2
                if _offset(zone, mid) == base:
                    a = mid
                else:
                    b = mid
            return b
        a = b
    return None


def _prev_transition(zone: ZoneInfo, lo: int, hi: int) -> int | None:
    """The last instant T with lo < T <= hi at which the offset changed to the offset at hi."""
    base = _offset(zone, hi)
    b = hi
    while b > lo:
        a = max(b - _STEP, lo)
        if _offset(zone, a) != base:
            while b - a > 1:
                mid = (a + b) // 2
                if _offset(zone, mid) == base:
                    b = mid
                else:
                    a = mid
            return b
        b = a
    return None


def _fold_start(zone: ZoneInfo, ts: int, off: int) -> tuple[int, int] | None:
    """If ``ts`` lies in the SECOND occurrence of a repeated (fall-back) interval, return
    ``(T, end)``: the transition instant and the end of that second occurrence."""
    t0 = _prev_transition(zone, ts - _FOLD_MAX, ts)
    if t0 is None:
        return None
    before = _offset(zone, t0 - 1)
    if before > off and ts < t0 + (before - off):
        return t0, t0 + (before - off)
    return None


# --------------------------------------------------------------------------------------------
# Local wall-clock matching ("walls": naive local times as seconds since 1970-01-01 00:00)
# --------------------------------------------------------------------------------------------


def _cron_step(cron: Any, start: float, *, forward: bool) -> float | None:
    try:
        result = cron.get_next(float, start) if forward else cron.get_prev(float, start)
    except (CroniterBadDateError, OverflowError, ValueError):
        return None
    return float(result)


def _day_matches(p: _Compiled, dc: Any, day: int) -> bool:
    if p.all_days:
        return True
    if p.day_sets is not None:
        return p.day_sets.match(day)
    found = _cron_step(dc, float(day * _DAY - 60), forward=True)
    return found is not None and int(found) == day * _DAY


def _next_day(p: _Compiled, dc: Any, day: int) -> int | None:
    """The first matching day after ``day``."""
    if p.all_days:
        return day + 1
    if p.day_sets is not None:
        for candidate in range(day + 1, day + 1 + _FAST_SCAN):
            if p.day_sets.match(candidate):
                return candidate
        day += _FAST_SCAN
    found = _cron_step(dc, float(day * _DAY), forward=True)
    return None if found is None else int(found) // _DAY


def _prev_day(p: _Compiled, dc: Any, day: int) -> int | None:
    """The last matching day before ``day``."""
    if p.all_days:
        return day - 1
    if p.day_sets is not None:
        for candidate in range(day - 1, day - 1 - _FAST_SCAN, -1):
            if p.day_sets.match(candidate):
                return candidate
        day -= _FAST_SCAN
    found = _cron_step(dc, float(day * _DAY), forward=False)
    return None if found is None else int(found) // _DAY


def _tods_after(p: _Compiled, tod: int) -> Iterator[int]:
    """Matching times of day strictly greater than ``tod`` (-1 = all), ascending."""
    hours, minutes, seconds = p.hours, p.minutes, p.seconds
    if tod < 0:
        h0, m0, s0 = -1, -1, -1
    else:
        h0, rest = divmod(tod, 3_600)
        m0, s0 = divmod(rest, 60)
    for h in hours[bisect_left(hours, h0) :]:
        if h == h0:
            for m in minutes[bisect_left(minutes, m0) :]:
                first = seconds[bisect_right(seconds, s0) :] if m == m0 else seconds
                for s in first:
                    yield h * 3_600 + m * 60 + s
        else:
            for m in minutes:
                for s in seconds:
                    yield h * 3_600 + m * 60 + s


def _tods_before(p: _Compiled, tod: int) -> Iterator[int]:
    """Matching times of day strictly less than ``tod`` (86400 = all), descending."""
    hours, minutes, seconds = p.hours, p.minutes, p.seconds
    h0, rest = divmod(tod, 3_600)
    m0, s0 = divmod(rest, 60)
    for h in reversed(hours[: bisect_right(hours, h0)]):
        if h == h0:
            for m in reversed(minutes[: bisect_right(minutes, m0)]):
                last = seconds[: bisect_left(seconds, s0)] if m == m0 else seconds
                for s in reversed(last):
                    yield h * 3_600 + m * 60 + s
        else:
            for m in reversed(minutes):
                for s in reversed(seconds):
                    yield h * 3_600 + m * 60 + s


def _walls_after(p: _Compiled, dc: Any, wall: int) -> Iterator[int]:
    """Matching walls strictly after ``wall``, ascending."""
    day, tod = divmod(wall, _DAY)
    if _day_matches(p, dc, day):
        base = day * _DAY
        for t in _tods_after(p, tod):
            yield base + t
    while True:
        nxt = _next_day(p, dc, day)
        if nxt is None:
            return
        day = nxt
        base = day * _DAY
        for t in _tods_after(p, -1):
            yield base + t


def _walls_before(p: _Compiled, dc: Any, wall: int) -> Iterator[int]:
    """Matching walls strictly before ``wall``, descending."""
    day, tod = divmod(wall, _DAY)
    if tod and _day_matches(p, dc, day):
        base = day * _DAY
        for t in _tods_before(p, tod):
            yield base + t
    while True:
        prv = _prev_day(p, dc, day)
        if prv is None:
            return
        day = prv
        base = day * _DAY
        for t in _tods_before(p, _DAY):
            yield base + t


def _any_wall(p: _Compiled, dc: Any, lo: int, hi: int) -> bool:
    """Is there a matching wall in [lo, hi)?"""
    first = next(_walls_after(p, dc, lo - 1), None)
    return first is not None and first < hi


def _tods_below(p: _Compiled, tod: int) -> int:
    """Number of matching times of day < ``tod`` (0 <= tod <= 86400)."""
    if tod >= _DAY:
        return p.per_day
    h0, rest = divmod(tod, 3_600)
    m0, s0 = divmod(rest, 60)
    n_m, n_s = len(p.minutes), len(p.seconds)
    count = bisect_left(p.hours, h0) * n_m * n_s
    if h0 in p.hour_set:
        count += bisect_left(p.minutes, m0) * n_s
        if m0 in p.minute_set:
            count += bisect_left(p.seconds, s0)
    return count


def _matching_days(p: _Compiled, dc: Any, first: int, end: int) -> int:
    """Number of matching days in [first, end)."""
    if end <= first:
        return 0
    if p.all_days:
        return end - first
    if p.day_sets is not None:
        return sum(1 for day in range(first, end) if p.day_sets.match(day))
    count = 0
    day = first - 1
    while True:
        nxt = _next_day(p, dc, day)
        if nxt is None or nxt >= end:
            return count
        count += 1
        day = nxt


def _count_walls(p: _Compiled, dc: Any, lo: int, hi: int) -> int:
    """Number of matching walls in [lo, hi)."""
    if hi <= lo:
        return 0
    d_lo, t_lo = divmod(lo, _DAY)
    d_hi, t_hi = divmod(hi, _DAY)
    if d_lo == d_hi:
        return _tods_below(p, t_hi) - _tods_below(p, t_lo) if _day_matches(p, dc, d_lo) else 0
    count = p.per_day - _tods_below(p, t_lo) if _day_matches(p, dc, d_lo) else 0
    count += _matching_days(p, dc, d_lo + 1, d_hi) * p.per_day
    if t_hi and _day_matches(p, dc, d_hi):
        count += _tods_below(p, t_hi)
    return count


# --------------------------------------------------------------------------------------------
# Fire iteration and counting (instants as int epoch seconds)
# --------------------------------------------------------------------------------------------


def _fires_after(p: _Compiled, after: int) -> Iterator[int]:
    """Fire instants strictly after ``after``, ascending, under the DST rule."""
    zone = p.zone
    dc = copy.copy(p.day_cron)
    lo = after + 1  # smallest candidate instant
    while True:
        off = _offset(zone, lo)
        if not p.frequent:
            before = _offset(zone, lo - 1)
            if before < off:
                # lo is the end of a spring-forward gap: every wall in the gap (and the wall
                # at the gap's end) maps to this one instant.
                if _any_wall(p, dc, lo + before, lo + off + 1):
                    yield lo
                    lo += 1
                    continue
            else:
                fold = _fold_start(zone, lo, off)
                if fold is not None:  # second occurrence of repeated walls: skip it
                    lo = fold[1]
                    continue
        clear = lo  # no transition in (lo, clear]
        restarted = False
        for wall in _walls_after(p, dc, lo + off - 1):
            u = wall - off
            if u > clear:
                horizon = max(u, clear + _STEP)
                t = _next_transition(zone, clear, horizon)
                if t is not None and t <= u:
                    lo = t
                    restarted = True
                    break
                clear = t - 1 if t is not None else horizon
            yield u
        if not restarted:
            return


def _fires_before(p: _Compiled, before: int) -> Iterator[int]:
    """Fire instants strictly before ``before``, descending, under the DST rule."""
    zone = p.zone
    dc = copy.copy(p.day_cron)
    hi = before - 1  # largest candidate instant
    last: int | None = None
    while True:
        off = _offset(zone, hi)
        if not p.frequent:
            fold = _fold_start(zone, hi, off)
            if fold is not None:
                hi = fold[0] - 1
                continue
        clear = hi  # no transition in (clear, hi]
        restarted = False
        for wall in _walls_before(p, dc, hi + off + 1):
            u = wall - off
            if u < clear:
                floor = min(u, clear - _STEP)
                t = _prev_transition(zone, floor, clear)
                if t is not None and t > u:
                    if not p.frequent:
                        gap_before = _offset(zone, t - 1)
                        if gap_before < off and t != last and _any_wall(p, dc, t + gap_before, t + off + 1):
                            last = t
                            yield t
                    hi = t - 1
                    restarted = True
                    break
                clear = t if t is not None else floor
            if not p.frequent:
                fold = _fold_start(zone, u, off)
                if fold is not None:
                    hi = fold[0] - 1
                    restarted = True
                    break
            if u != last:
                last = u
                yield u
        if not restarted:
            return


def _count(p: _Compiled, lo: int, hi: int) -> int:
    """Number of fire instants in [lo, hi). Cost grows with the number of days (transition
    probes, and day matching for restricted day fields), not with the number of fires."""
    zone = p.zone
    dc = copy.copy(p.day_cron)
    total = 0
    while lo < hi:
        off = _offset(zone, lo)
        wall_start = lo + off
        if not p.frequent:
            before = _offset(zone, lo - 1)
            if before < off:
                if _any_wall(p, dc, lo + before, lo + off + 1):
                    total += 1
                wall_start = lo + off + 1
            else:
                fold = _fold_start(zone, lo, off)
                if fold is not None:
                    lo = fold[1]
                    continue
        t = _next_transition(zone, lo, hi - 1)
        seg_end = t if t is not None else hi
        total += _count_walls(p, dc, wall_start, seg_end + off)
        lo = seg_end
    return total


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def _year_bounds(spec: CronSpec, p: _Compiled) -> tuple[int, int] | None:
    """[first instant, end instant) of the years an EventBridge expression is limited to, in the
    schedule's zone; None when it fires in every year."""
    if spec.years is None:
        return None
    first, last = spec.years
    start = datetime(first, 1, 1, tzinfo=p.zone)
    end = datetime(last + 1, 1, 1, tzinfo=p.zone)
    return to_epoch_seconds(start), to_epoch_seconds(end)


def _after_in(bounds: tuple[int, int] | None, after: int) -> int:
    return after if bounds is None else max(after, bounds[0] - 1)


def _before_in(bounds: tuple[int, int] | None, before: int) -> int:
    return before if bounds is None else min(before, bounds[1])


def next_fire(spec: CronSpec, after: datetime) -> datetime | None:
    """The first fire time strictly after ``after`` (aware), as UTC; None if there is none."""
    _require_aware(after, "after")
    found = fires_between(spec, after, None, 1)
    return found[0] if found else None


def next_fires(spec: CronSpec, after: datetime, n: int) -> list[datetime]:
    """The first ``n`` (0..20) fire times strictly after ``after``: a preview."""
    if not 0 <= n <= MAX_PREVIEW:
        raise ValueError(f"n must be between 0 and {MAX_PREVIEW}")
    return fires_between(spec, after, None, n)


def prev_fire(spec: CronSpec, before: datetime) -> datetime | None:
    """The last fire time strictly before ``before`` (aware), as UTC; None if there is none."""
    _require_aware(before, "before")
    p = _compile(spec.expression, spec.timezone)
    bounds = _year_bounds(spec, p)
    found = next(_fires_before(p, _before_in(bounds, _ceil_seconds(before))), None)
    if found is None or (bounds is not None and found < bounds[0]):
        return None
    return _to_dt(found)


def fires_between(
    spec: CronSpec, start_exclusive: datetime, end_exclusive: datetime | None, limit: int
) -> list[datetime]:
    """The first ``limit`` fire times in (start_exclusive, end_exclusive), ascending.

    ``end_exclusive=None`` means unbounded. Cost is proportional to ``limit`` (plus one cheap
    offset probe per day crossed), never to the window length."""
    _require_aware(start_exclusive, "start_exclusive")
    if limit < 0:
        raise ValueError("limit must be >= 0")
    end = None
    if end_exclusive is not None:
        _require_aware(end_exclusive, "end_exclusive")
        end = _ceil_seconds(end_exclusive)
    p = _compile(spec.expression, spec.timezone)
    bounds = _year_bounds(spec, p)
    if bounds is not None:
        end = bounds[1] if end is None else min(end, bounds[1])
    out: list[datetime] = []
    if limit == 0:
        return out
    for ts in _fires_after(p, _after_in(bounds, to_epoch_seconds(start_exclusive))):
        if end is not None and ts >= end:
            break
        out.append(_to_dt(ts))
        if len(out) >= limit:
            break
    return out


def latest_fires_between(
    spec: CronSpec, start_exclusive: datetime, end_exclusive: datetime, limit: int
) -> list[datetime]:
    """The LAST ``limit`` fire times in (start_exclusive, end_exclusive), ascending (newest last).

    Walks backwards from ``end_exclusive``: cost is proportional to ``limit``."""
    _require_aware(start_exclusive, "start_exclusive")
    _require_aware(end_exclusive, "end_exclusive")
    if limit < 0:
        raise ValueError("limit must be >= 0")
    p = _compile(spec.expression, spec.timezone)
    bounds = _year_bounds(spec, p)
    start = _after_in(bounds, to_epoch_seconds(start_exclusive))
    out: list[int] = []
    if limit == 0:
        return []
    for ts in _fires_before(p, _before_in(bounds, _ceil_seconds(end_exclusive))):
        if ts <= start:
            break
        out.append(ts)
        if len(out) >= limit:
            break
    return [_to_dt(ts) for ts in reversed(out)]


def count_fires_between(spec: CronSpec, start_exclusive: datetime, end_exclusive: datetime) -> int:
    """Exact number of fire times in (start_exclusive, end_exclusive), without enumerating them.

    Cost: O(days in the window) cheap offset probes (microseconds each), plus one croniter step
    per matching day when the day fields are restricted; independent of the fire rate."""
    _require_aware(start_exclusive, "start_exclusive")
    _require_aware(end_exclusive, "end_exclusive")
    p = _compile(spec.expression, spec.timezone)
    bounds = _year_bounds(spec, p)
    lo = _after_in(bounds, to_epoch_seconds(start_exclusive)) + 1
    hi = _before_in(bounds, _ceil_seconds(end_exclusive))
    return _count(p, lo, hi) if lo < hi else 0


def validate_at(at: datetime, now: datetime) -> None:
    """Validate a one-time schedule's ``at``: it must carry a UTC offset and must not be more
    than :data:`AT_GRACE` (5 s) in the past. Raises :class:`CronError` with ``field="at"``."""
    _require_aware(now, "now")
    if not isinstance(at, datetime):
        raise CronError("at must be a date-time", "at")
    if at.tzinfo is None or at.utcoffset() is None:
        raise CronError("at must include a UTC offset, e.g. 2026-03-08T09:00:00Z or +01:00", "at")
    if at < now - AT_GRACE:
        raise CronError(
            f"at {at.astimezone(UTC).isoformat()} is in the past (now {now.astimezone(UTC).isoformat()})",
            "at",
        )
