"""EventBridge Scheduler schedule expressions, read as EdgeCron cron expressions.

Pure module. A schedule's ``cron`` may be written the way Amazon EventBridge Scheduler writes a
schedule expression; the schedule stores it as given and runs its translation (:func:`translate`):

* ``cron(minutes hours day-of-month month day-of-week year)``: six fields, minutes first. Day-of-week
  numbers are EventBridge's (1 = SUN ... 7 = SAT); one of day-of-month and day-of-week is ``?``.
  ``L`` (last day of the month; in day-of-week ``L`` alone is SAT and ``nL`` the last day n of the
  month), ``nW`` (weekday nearest day n) and ``n#k`` (k-th day n of the month) as documented. The
  year is ``*``, one year or one range of years.
* ``rate(value unit)``: unit ``minute``/``minutes``, ``hour``/``hours``, ``day``/``days`` (singular
  for 1, plural otherwise). EdgeCron aligns a rate to the clock of the schedule's zone:
  ``rate(15 minutes)`` fires at :00, :15, :30 and :45, ``rate(1 day)`` at midnight. An interval that
  does not divide an hour or a day evenly cannot be aligned, and is refused.
* ``at(yyyy-mm-ddThh:mm:ss)``: once, at that wall time in the schedule's zone.

What cannot be represented is refused with the reason (:class:`EventBridgeError`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final

__all__ = ["EventBridgeError", "Translation", "is_eventbridge", "translate"]

_KEYWORD: Final = re.compile(r"^\s*(cron|rate|at)\s*\(", re.IGNORECASE)
_FORM: Final = re.compile(r"^\s*(cron|rate|at)\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)
_RATE: Final = re.compile(r"^\s*(\d{1,6})\s+([A-Za-z]+)\s*$")
_AT: Final = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$")
_YEAR: Final = re.compile(r"^(\d{4})(?:-(\d{4}))?$")
_DOW_NAMES: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")  # unix number = index
_YEAR_MIN: Final = 1970
_YEAR_MAX: Final = 2199
_MINUTE_STEPS: Final = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)
_HOUR_STEPS: Final = (1, 2, 3, 4, 6, 8, 12)
_UNITS: Final = {"minute": 1, "hour": 60, "day": 1440}
_FIELD_CHARS: Final = {
    "minutes": (re.compile(r"^[0-9,\-*/]+$"), ", - * /"),
    "hours": (re.compile(r"^[0-9,\-*/]+$"), ", - * /"),
    "day-of-month": (re.compile(r"^[0-9,\-*/?LW]+$", re.IGNORECASE), ", - * ? / L W"),
    "month": (re.compile(r"^[0-9A-Za-z,\-*/]+$"), ", - * / and JAN-DEC"),
    "day-of-week": (re.compile(r"^[0-9A-Za-z,\-*?#]+$"), ", - * ? L # and SUN-SAT"),
}


class EventBridgeError(ValueError):
    """An EventBridge expression EdgeCron does not accept; ``str(exc)`` says why."""


@dataclass(frozen=True)
class Translation:
    """What an EventBridge expression runs as: an EdgeCron ``cron`` (5 fields, or 6 with seconds
    first) and the years it is limited to (first, last; None for every year)."""

    cron: str
    years: tuple[int, int] | None = None

    @property
    def shown(self) -> str:
        """The equivalent as shown to people: the cron, then the years it is limited to."""
        if self.years is None:
            return self.cron
        first, last = self.years
        return f"{self.cron} (year {first})" if first == last else f"{self.cron} (years {first}-{last})"


def is_eventbridge(expression: object) -> bool:
    """Whether ``expression`` is written as an EventBridge expression (``cron(``, ``rate(``, ``at(``)."""
    return isinstance(expression, str) and _KEYWORD.match(expression) is not None


def translate(expression: str) -> Translation | None:
    """The translation of an EventBridge expression; None when ``expression`` is not one.
    Raises :class:`EventBridgeError` when it is one that EdgeCron cannot represent."""
    if not is_eventbridge(expression):
        return None
    form = _FORM.match(expression)
    if form is None:
        raise EventBridgeError(f"{expression.strip()!r} must end with ')' and have nothing after it")
    keyword, body = form.group(1).lower(), form.group(2)
    if keyword == "cron":
        try:
            return _cron(body)
        except EventBridgeError as exc:  # name the expression as written
            raise EventBridgeError(str(exc).replace("cron(...)", expression.strip(), 1)) from None
    if keyword == "rate":
        return _rate(body)
    return _at(body)


# --- cron(...) ----------------------------------------------------------------------------------


def _cron(body: str) -> Translation:
    fields = body.split()
    if len(fields) != 6:
        raise EventBridgeError(
            f"cron(...) has {len(fields)} fields; EventBridge cron has 6: "
            "minutes hours day-of-month month day-of-week year"
        )
    minutes, hours, dom, month, dow, year = fields
    for name, value in zip(_FIELD_CHARS, fields[:5], strict=True):
        pattern, allowed = _FIELD_CHARS[name]
        if not pattern.match(value):
            raise EventBridgeError(f"cron(...) {name} field {value!r}: use values with {allowed}")
    if (dom == "?") == (dow == "?"):
        raise EventBridgeError(
            "cron(...) needs '?' in exactly one of day-of-month and day-of-week "
            f"(got {dom!r} and {dow!r}): EventBridge cannot restrict both, and '?' in both means no day"
        )
    days = "*" if dom == "?" else dom
    weekdays = "*" if dow == "?" else _weekdays(dow)
    return Translation(" ".join([minutes, hours, days, month, weekdays]), _years(year))


def _weekday(value: str, field: str) -> int:
    """An EventBridge day of the week (1 = SUN ... 7 = SAT, or a name) as a unix number (0 = SUN)."""
    name = value.upper()
    if name in _DOW_NAMES:
        return _DOW_NAMES.index(name)
    if name == "L":
        raise EventBridgeError(f"cron(...) day-of-week field {field!r}: 'L' cannot be part of a range")
    if value.isdigit() and 1 <= int(value) <= 7:
        return int(value) - 1
    raise EventBridgeError(
        f"cron(...) day-of-week field {field!r}: {value!r} is not a day; use 1 (SUN) to 7 (SAT) or SUN-SAT"
    )


def _weekdays(field: str) -> str:
    out: list[str] = []
    for element in field.split(","):
        upper = element.upper()
        if element == "":
            raise EventBridgeError(f"cron(...) day-of-week field {field!r} has an empty list element")
        if element == "*":
            out.append("*")
        elif upper == "L":  # the last day of the week
            out.append("6")
        elif upper.endswith("L") and "-" not in upper and "#" not in upper:
            out.append(f"L{_weekday(element[:-1], field)}")
        elif "#" in element:
            day, _, nth = element.partition("#")
            if not (nth.isdigit() and 1 <= int(nth) <= 5):
                raise EventBridgeError(
                    f"cron(...) day-of-week field {field!r}: {element!r} needs a week from 1 to 5 after '#'"
                )
            out.append(f"{_weekday(day, field)}#{int(nth)}")
        elif "-" in element:
            first, _, last = element.partition("-")
            out.append(f"{_day_token(first, field)}-{_day_token(last, field)}")
        else:
            out.append(_day_token(element, field))
    return ",".join(out)


def _day_token(value: str, field: str) -> str:
    """A day as the translation writes it: a name stays a name, a number becomes the unix one."""
    number = _weekday(value, field)
    return value.upper() if value.upper() in _DOW_NAMES else str(number)


def _years(field: str) -> tuple[int, int] | None:
    if field == "*":
        return None
    match = _YEAR.match(field)
    if match is None:
        raise EventBridgeError(
            f"cron(...) year field {field!r} cannot be represented: EdgeCron limits a schedule to "
            "every year (*), one year (2027) or one range of years (2027-2029); for a list or a step "
            "of years, create one schedule per year or range"
        )
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if not (_YEAR_MIN <= first <= last <= _YEAR_MAX):
        raise EventBridgeError(
            f"cron(...) year field {field!r}: years run from {_YEAR_MIN} to {_YEAR_MAX}, "
            "and a range goes from the earlier year to the later"
        )
    return first, last


# --- rate(...) ----------------------------------------------------------------------------------


def _rate(body: str) -> Translation:
    match = _RATE.match(body)
    if match is None:
        raise EventBridgeError(
            f"rate({body.strip()}) must be rate(value unit): a whole number and minute(s), hour(s) or day(s)"
        )
    value, unit = int(match.group(1)), match.group(2).lower()
    singular = unit[:-1] if unit.endswith("s") else unit
    if singular not in _UNITS:
        raise EventBridgeError(f"rate(...) unit {unit!r}: use minute(s), hour(s) or day(s)")
    if value < 1:
        raise EventBridgeError(f"rate({value} {unit}): the value must be at least 1")
    if (value == 1) != (unit == singular):
        expected = singular if value == 1 else f"{singular}s"
        raise EventBridgeError(
            f"rate({value} {unit}): write rate({value} {expected}) "
            "(EventBridge uses the singular unit for 1 and the plural otherwise)"
        )
    total = value * _UNITS[singular]  # minutes
    if total < 60 and 60 % total == 0:
        return Translation("* * * * *" if total == 1 else f"*/{total} * * * *")
    if total % 60 == 0 and total < 1440 and 24 % (total // 60) == 0:
        hours = total // 60
        return Translation("0 * * * *" if hours == 1 else f"0 */{hours} * * *")
    if total == 1440:
        return Translation("0 0 * * *")
    raise EventBridgeError(
        f"rate({value} {unit}) cannot be represented: EdgeCron aligns a rate to the clock, so its "
        f"interval must divide an hour ({', '.join(map(str, _MINUTE_STEPS))} minutes) or a day "
        f"({', '.join(map(str, _HOUR_STEPS))} hours), or be 1 day; write other intervals as cron(...)"
    )


# --- at(...) ------------------------------------------------------------------------------------


def _at(body: str) -> Translation:
    match = _AT.match(body.strip())
    if match is None:
        raise EventBridgeError(
            f"at({body.strip()}) must be at(yyyy-mm-ddThh:mm:ss), a wall time in the schedule's "
            "timezone without an offset, e.g. at(2027-01-01T09:00:00)"
        )
    year, month, day, hour, minute, second = (int(g) for g in match.groups())
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise EventBridgeError(f"at({body.strip()}) is not a date and time: {exc}") from None
    if not _YEAR_MIN <= year <= _YEAR_MAX:
        raise EventBridgeError(f"at({body.strip()}): years run from {_YEAR_MIN} to {_YEAR_MAX}")
    return Translation(f"{second} {minute} {hour} {day} {month} *", (year, year))
