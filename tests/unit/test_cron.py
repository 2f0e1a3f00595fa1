"""Cron parsing, next/prev fire times and the DST rule (edgecron.domain.cron).

The DST part has three layers:
* hand-verified assertions (explicit instants worked out by hand from the tz rules);
* properties over the whole corpus (6 zones x 2025-2027), checked against small independent
  oracles written with zoneinfo only: fixed-time jobs on every day of the three years, frequent
  jobs on every transition day;
* the golden files in tests/unit/golden/ (written once by generate.py), compared verbatim.
"""

from __future__ import annotations

import bisect
import importlib.util
import itertools
import json
import random
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from edgecron.domain.cron import (
    AT_GRACE,
    CronError,
    CronSpec,
    check_steps,
    check_zone_name,
    count_fires_between,
    fires_between,
    is_frequent,
    latest_fires_between,
    next_fire,
    next_fires,
    parse_cron,
    prev_fire,
    validate_at,
)

GOLDEN = Path(__file__).resolve().parent / "golden"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("edgecron_golden_generate", GOLDEN / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def offset_s(zone: ZoneInfo, t: datetime) -> int:
    delta = t.astimezone(zone).utcoffset()
    assert delta is not None
    return int(delta.total_seconds())


def day_fires(expr: str, zone: str, day: date) -> list[datetime]:
    return gen.day_fires(parse_cron(expr, zone), day)  # type: ignore[no-any-return]


def local_strs(fires: list[datetime], zone: str) -> list[str]:
    tz = ZoneInfo(zone)
    return [f.astimezone(tz).isoformat() for f in fires]


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def test_parse_five_and_six_fields() -> None:
    five = parse_cron("  */5   9-17 * *  MON-FRI ", "Europe/Berlin")
    assert five == CronSpec("*/5 9-17 * * MON-FRI", "Europe/Berlin", has_seconds=False)
    six = parse_cron("15 30 2 * * *")
    assert six == CronSpec("15 30 2 * * *", "UTC", has_seconds=True)
    # seconds come FIRST: 02:30:15, not 15:02 with second 30
    assert next_fire(six, utc(2026, 1, 1)) == utc(2026, 1, 1, 2, 30, 15)
    assert next_fire(parse_cron("0 15 10 * * *"), utc(2026, 1, 1)) == utc(2026, 1, 1, 10, 15, 0)
    # a 5-field expression fires at second 0
    assert next_fire(parse_cron("30 2 * * *"), utc(2026, 1, 1)) == utc(2026, 1, 1, 2, 30, 0)


def test_every_second_and_every_ten_seconds() -> None:
    every = parse_cron("* * * * * *")
    assert next_fires(every, utc(2026, 1, 1, 0, 0, 0), 3) == [
        utc(2026, 1, 1, 0, 0, 1),
        utc(2026, 1, 1, 0, 0, 2),
        utc(2026, 1, 1, 0, 0, 3),
    ]
    ten = parse_cron("*/10 * * * * *")
    assert next_fires(ten, utc(2026, 1, 1, 0, 0, 5), 2) == [
        utc(2026, 1, 1, 0, 0, 10),
        utc(2026, 1, 1, 0, 0, 20),
    ]


def test_aliases_names_and_extensions() -> None:
    assert parse_cron("@DAILY").expression == "@daily"
    daily = parse_cron("@daily", "Asia/Shanghai")
    assert next_fire(daily, utc(2026, 5, 1)) == utc(2026, 5, 1, 16, 0)  # 00:00 +08:00
    assert next_fire(parse_cron("@hourly"), utc(2026, 5, 1, 0, 10)) == utc(2026, 5, 1, 1)
    assert next_fire(parse_cron("0 0 1 JAN *"), utc(2026, 5, 1)) == utc(2027, 1, 1)
    # dow 7 and 0 are Sunday; 2026-05-03 is a Sunday
    assert next_fire(parse_cron("0 12 * * 7"), utc(2026, 5, 1)) == utc(2026, 5, 3, 12)
    assert next_fire(parse_cron("0 12 * * sun"), utc(2026, 5, 1)) == utc(2026, 5, 3, 12)
    # ? = *, L = last day of month, 15W, 5#3 (third Friday), L5 (last Friday)
    assert next_fire(parse_cron("0 0 ? * MON"), utc(2026, 5, 1)) == utc(2026, 5, 4)
    assert next_fire(parse_cron("0 0 L * ?"), utc(2026, 2, 1)) == utc(2026, 2, 28)
    assert next_fire(parse_cron("0 0 15W * *"), utc(2026, 8, 1)) == utc(2026, 8, 14)  # Sat 15th
    assert next_fire(parse_cron("0 0 * * 5#3"), utc(2026, 1, 1)) == utc(2026, 1, 16)
    assert next_fire(parse_cron("0 0 * * L5"), utc(2026, 1, 1)) == utc(2026, 1, 30)
    # day-of-month and day-of-week both restricted: either matches (Vixie cron)
    both = parse_cron("0 0 13 * FRI")
    assert next_fires(both, utc(2026, 2, 1), 3) == [utc(2026, 2, 6), utc(2026, 2, 13), utc(2026, 2, 20)]
    # Feb 29 is accepted (fires in leap years)
    assert next_fire(parse_cron("0 0 29 2 *"), utc(2026, 1, 1)) == utc(2028, 2, 29)


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        ("", "empty"),
        ("* * * *", "4 fields"),
        ("0 0 1 1 * 2026 x", "7 fields"),
        ("61 * * * *", "minute field '61'"),
        ("0 24 * * *", "hour field '24'"),
        ("0 0 32 * *", "day-of-month field '32'"),
        ("0 0 * 13 *", "month field '13'"),
        ("0 0 * * 8", "day-of-week field '8'"),
        ("60 * * * * *", "second field '60'"),
        ("*/0 * * * *", "minute field '*/0'"),
        ("1,,2 * * * *", "empty list element"),
        ("a b c d e", "minute field 'a'"),
        ("H * * * *", "H (hashed)"),
        ("R * * * *", "R (random)"),
        ("0 0 * * 5L", "write the last weekday of the month as 'Ln'"),
        ("0 0 LW * *", "'LW' and 'L-n' are not supported"),
        ("0 0 L-3 * *", "'LW' and 'L-n' are not supported"),
        ("0 0 1#2 * *", "'#' is only allowed in day-of-week"),
        ("@reboot", "unknown alias"),
        ("@daily 1", "must be the whole expression"),
        ("0 0 * * * ;", "invalid character"),
        ("0 0 30 2 *", "never fires"),
        ("0 0 31 4,6,9,11 *", "never fires"),
    ],
)
def test_invalid_expressions(expression: str, needle: str) -> None:
    with pytest.raises(CronError) as info:
        parse_cron(expression)
    assert info.value.field == "cron"
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "../etc/passwd", "EST5EDT/x"])
def test_invalid_timezone(zone: str) -> None:
    with pytest.raises(CronError) as info:
        parse_cron("0 0 * * *", zone)
    assert info.value.field == "timezone"


@pytest.mark.parametrize(
    ("expression", "needle"),
    [
        ("*/1000 * * * * *", "second field '*/1000'"),
        ("0-59/61 * * * *", "minute field '0-59/61'"),
        ("0 */25 * * *", "hour field '*/25'"),
        ("0 0 1/32 * *", "day-of-month field '1/32'"),
        ("0 0 * */13 *", "month field '*/13'"),
        ("0 0 * * */8", "day-of-week field '*/8'"),
    ],
)
def test_a_step_larger_than_its_fields_range_is_refused(expression: str, needle: str) -> None:
    parse_cron(expression)  # a stored definition keeps computing; only new ones are refused
    with pytest.raises(CronError) as info:
        check_steps(expression)
    assert info.value.field == "cron"
    assert needle in str(info.value) and "larger than" in str(info.value)


@pytest.mark.parametrize("expression", ["*/60 * * * * *", "*/60 * * * *", "0 */24 * * *", "0 0 * * */7"])
def test_a_step_as_large_as_its_fields_range_is_accepted(expression: str) -> None:
    assert check_steps(expression) == expression


@pytest.mark.parametrize("zone", ["localtime", "Factory", "posixrules", "posix/Europe/Berlin", "right/UTC"])
def test_special_zone_files_are_not_timezones(zone: str) -> None:
    with pytest.raises(CronError) as info:
        check_zone_name(zone)
    assert info.value.field == "timezone"


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Asia/Kolkata"])
def test_canonical_zone_names_are_accepted(zone: str) -> None:
    assert check_zone_name(zone) == zone
    assert parse_cron("0 0 * * *", zone).timezone == zone


def test_frequent_classification() -> None:
    assert is_frequent(parse_cron("*/15 * * * *"))
    assert is_frequent(parse_cron("0 * * * *"))
    assert is_frequent(parse_cron("0 0-23 * * *"))
    assert is_frequent(parse_cron("*/10 * * * * *"))
    assert not is_frequent(parse_cron("0 */2 * * *"))
    assert not is_frequent(parse_cron("*/15 9-17 * * *"))
    assert not is_frequent(parse_cron("30 2 * * *"))


# ---------------------------------------------------------------------------------------------
# Boundaries and API contract
# ---------------------------------------------------------------------------------------------


def test_next_and_prev_are_strict_and_second_precise() -> None:
    spec = parse_cron("30 2 * * *")
    fire = utc(2026, 1, 1, 2, 30)
    assert next_fire(spec, fire) == utc(2026, 1, 2, 2, 30)
    assert next_fire(spec, fire - timedelta(microseconds=1)) == fire
    assert prev_fire(spec, fire) == utc(2025, 12, 31, 2, 30)
    assert prev_fire(spec, fire + timedelta(microseconds=1)) == fire
    # any aware input works; output is UTC
    berlin = fire.astimezone(ZoneInfo("Europe/Berlin"))
    out = next_fire(spec, berlin)
    assert out == utc(2026, 1, 2, 2, 30) and out is not None and out.tzinfo is UTC


def test_naive_and_bad_arguments_rejected() -> None:
    spec = parse_cron("* * * * *")
    with pytest.raises(ValueError, match="timezone-aware"):
        next_fire(spec, datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        prev_fire(spec, datetime(2026, 1, 1))
    with pytest.raises(ValueError):
        next_fires(spec, utc(2026, 1, 1), 21)
    assert next_fires(spec, utc(2026, 1, 1), 0) == []
    assert len(next_fires(spec, utc(2026, 1, 1), 20)) == 20


def test_fires_between_is_bounded_by_limit() -> None:
    every = parse_cron("* * * * * *", "America/New_York")
    start, end = utc(2025, 1, 1), utc(2035, 1, 1)
    assert fires_between(every, start, end, 3) == [
        utc(2025, 1, 1, 0, 0, 1),
        utc(2025, 1, 1, 0, 0, 2),
        utc(2025, 1, 1, 0, 0, 3),
    ]
    assert latest_fires_between(every, start, end, 2) == [
        utc(2034, 12, 31, 23, 59, 58),
        utc(2034, 12, 31, 23, 59, 59),
    ]
    assert count_fires_between(every, start, end) == (end - start).days * 86_400 - 1
    assert fires_between(every, start, start + timedelta(seconds=1), 10) == []


def test_validate_at() -> None:
    now = utc(2026, 3, 1, 12)
    validate_at(now + timedelta(days=30), now)
    validate_at(now - AT_GRACE, now)
    validate_at((now - timedelta(seconds=4)).astimezone(ZoneInfo("Asia/Shanghai")), now)
    with pytest.raises(CronError) as info:
        validate_at(now - timedelta(seconds=6), now)
    assert info.value.field == "at" and "in the past" in str(info.value)
    with pytest.raises(CronError) as info:
        validate_at(datetime(2026, 4, 1, 9), now)
    assert info.value.field == "at" and "UTC offset" in str(info.value)


# ---------------------------------------------------------------------------------------------
# DST: hand-verified instants
# ---------------------------------------------------------------------------------------------


def test_new_york_hand_verified() -> None:
    ny = "America/New_York"
    # spring 2026-03-08: 02:00 EST -> 03:00 EDT; 02:30 does not exist -> 03:00 EDT = 07:00Z
    assert day_fires("30 2 * * *", ny, date(2026, 3, 8)) == [utc(2026, 3, 8, 7, 0)]
    assert local_strs(day_fires("30 2 * * *", ny, date(2026, 3, 8)), ny) == ["2026-03-08T03:00:00-04:00"]
    assert day_fires("0 2 * * *", ny, date(2026, 3, 8)) == [utc(2026, 3, 8, 7, 0)]
    assert day_fires("15 30 2 * * *", ny, date(2026, 3, 8)) == [utc(2026, 3, 8, 7, 0, 0)]
    assert day_fires("15 30 2 * * *", ny, date(2026, 3, 9)) == [utc(2026, 3, 9, 6, 30, 15)]
    # 02:00 and 03:00 both land on 07:00Z: one fire, not two
    assert day_fires("0 2,3 * * *", ny, date(2026, 3, 8)) == [utc(2026, 3, 8, 7, 0)]
    # autumn 2026-11-01: 02:00 EDT -> 01:00 EST; 01:30 happens twice -> first (EDT) only
    assert day_fires("30 1 * * *", ny, date(2026, 11, 1)) == [utc(2026, 11, 1, 5, 30)]
    assert day_fires("45 1 * * *", ny, date(2026, 11, 1)) == [utc(2026, 11, 1, 5, 45)]
    assert day_fires("30 2 * * *", ny, date(2026, 11, 1)) == [utc(2026, 11, 1, 7, 30)]

    # a step on the hour is fixed-time: 02:00 is skipped on the spring day -> 03:00 EDT
    assert day_fires("0 */2 * * *", ny, date(2026, 3, 8))[:3] == [
        utc(2026, 3, 8, 5),
        utc(2026, 3, 8, 7),
        utc(2026, 3, 8, 8),
    ]
    # every minute of a fixed hour: the whole 02:xx hour is in the gap -> one fire at 03:00 EDT;
    # the repeated 01:xx hour runs in its first occurrence only
    assert day_fires("* 2 * * *", ny, date(2026, 3, 8)) == [utc(2026, 3, 8, 7)]
    autumn_1 = day_fires("* 1 * * *", ny, date(2026, 11, 1))
    assert len(autumn_1) == 60
    assert autumn_1[0] == utc(2026, 11, 1, 5, 0) and autumn_1[-1] == utc(2026, 11, 1, 5, 59)

    q = day_fires("*/15 * * * *", ny, date(2026, 11, 1))
    assert len(q) == 100  # 25 h x 4
    assert [f for f in q if utc(2026, 11, 1, 5) <= f < utc(2026, 11, 1, 6)] == [
        utc(2026, 11, 1, 5, 0),
        utc(2026, 11, 1, 5, 15),
        utc(2026, 11, 1, 5, 30),
        utc(2026, 11, 1, 5, 45),
    ]
    assert [f for f in q if utc(2026, 11, 1, 6) <= f < utc(2026, 11, 1, 7)] == [
        utc(2026, 11, 1, 6, 0),
        utc(2026, 11, 1, 6, 15),
        utc(2026, 11, 1, 6, 30),
        utc(2026, 11, 1, 6, 45),
    ]
    spring = day_fires("*/15 * * * *", ny, date(2026, 3, 8))
    assert len(spring) == 92  # 23 h x 4
    assert utc(2026, 3, 8, 6, 45) in spring and utc(2026, 3, 8, 7, 0) in spring
    assert all(b - a == timedelta(minutes=15) for a, b in itertools.pairwise(spring))

    hourly_autumn = day_fires("0 * * * *", ny, date(2026, 11, 1))
    assert len(hourly_autumn) == 25
    assert utc(2026, 11, 1, 5) in hourly_autumn and utc(2026, 11, 1, 6) in hourly_autumn
    assert len(day_fires("0 * * * *", ny, date(2026, 3, 8))) == 23
    assert len(day_fires("*/10 * * * * *", ny, date(2026, 3, 8))) == 23 * 360
    assert len(day_fires("*/10 * * * * *", ny, date(2026, 11, 1))) == 25 * 360


def test_europe_hand_verified() -> None:
    lon, ber = "Europe/London", "Europe/Berlin"
    # London 2026-03-29: 01:00 GMT -> 02:00 BST; 01:30 -> 02:00 BST = 01:00Z
    assert day_fires("30 1 * * *", lon, date(2026, 3, 29)) == [utc(2026, 3, 29, 1, 0)]
    # London 2026-10-25: 02:00 BST -> 01:00 GMT; 01:30 first occurrence = 00:30Z
    assert day_fires("30 1 * * *", lon, date(2026, 10, 25)) == [utc(2026, 10, 25, 0, 30)]
    # Berlin 2026-03-29: 02:00 CET -> 03:00 CEST; 02:30 -> 03:00 CEST = 01:00Z
    assert day_fires("30 2 * * *", ber, date(2026, 3, 29)) == [utc(2026, 3, 29, 1, 0)]
    # Berlin 2026-10-25: 03:00 CEST -> 02:00 CET; 02:30 first occurrence (CEST) = 00:30Z
    assert day_fires("30 2 * * *", ber, date(2026, 10, 25)) == [utc(2026, 10, 25, 0, 30)]
    assert day_fires("0 9 * * 1-5", ber, date(2026, 10, 25)) == []  # a Sunday


def test_lord_howe_half_hour_shift() -> None:
    lh = "Australia/Lord_Howe"
    # 2026-10-04: 02:00 +10:30 -> 02:30 +11:00. 02:00 and 02:15 fall in the gap -> 02:30 = 15:30Z
    assert day_fires("0 2 * * *", lh, date(2026, 10, 4)) == [utc(2026, 10, 3, 15, 30)]
    assert local_strs(day_fires("0 2 * * *", lh, date(2026, 10, 4)), lh) == ["2026-10-04T02:30:00+11:00"]
    assert day_fires("30 2 * * *", lh, date(2026, 10, 4)) == [utc(2026, 10, 3, 15, 30)]
    # 2026-04-05: 02:00 +11:00 -> 01:30 +10:30; 01:45 twice -> first (+11:00) = 14:45Z
    assert day_fires("45 1 * * *", lh, date(2026, 4, 5)) == [utc(2026, 4, 4, 14, 45)]
    # hourly: the local hour 02:00 does not exist in spring -> 90 real minutes 01:00 -> 03:00
    spring = day_fires("0 * * * *", lh, date(2026, 10, 4))
    assert len(spring) == 23
    assert utc(2026, 10, 3, 14, 30) in spring and utc(2026, 10, 3, 16, 0) in spring
    assert utc(2026, 10, 3, 15, 30) not in spring
    # autumn: 01:00 (+11) then 02:00 (+10:30): 90 real minutes, 24 fires; */15 has 98 (24.5 h)
    autumn = day_fires("0 * * * *", lh, date(2026, 4, 5))
    assert len(autumn) == 24
    assert utc(2026, 4, 4, 14, 0) in autumn and utc(2026, 4, 4, 15, 30) in autumn
    assert len(day_fires("*/15 * * * *", lh, date(2026, 4, 5))) == 98
    assert len(day_fires("*/15 * * * *", lh, date(2026, 10, 4))) == 94


def test_santiago_midnight_transitions() -> None:
    scl = "America/Santiago"
    # 2026-09-06: 00:00 -04 -> 01:00 -03. Midnight does not exist -> 01:00 -03 = 04:00Z
    assert day_fires("0 0 * * *", scl, date(2026, 9, 6)) == [utc(2026, 9, 6, 4, 0)]
    assert local_strs(day_fires("0 0 * * *", scl, date(2026, 9, 6)), scl) == ["2026-09-06T01:00:00-03:00"]
    assert day_fires("0 0 * * *", scl, date(2026, 9, 5)) == [utc(2026, 9, 5, 4, 0)]
    # 2026-04-05 00:00 -03 -> 2026-04-04 23:00 -04: 23:30 on Apr 4 twice -> first = 02:30Z
    assert day_fires("30 23 * * *", scl, date(2026, 4, 4)) == [utc(2026, 4, 5, 2, 30)]
    assert day_fires("0 0 * * *", scl, date(2026, 4, 5)) == [utc(2026, 4, 5, 4, 0)]
    assert day_fires("0 0 * * *", scl, date(2026, 4, 4)) == [utc(2026, 4, 4, 3, 0)]
    assert len(day_fires("*/15 * * * *", scl, date(2026, 9, 6))) == 92
    assert len(day_fires("*/15 * * * *", scl, date(2026, 4, 4))) == 100


def test_shanghai_has_no_transitions() -> None:
    assert day_fires("30 2 * * *", "Asia/Shanghai", date(2026, 3, 8)) == [utc(2026, 3, 7, 18, 30)]
    assert gen.transitions("Asia/Shanghai") == ()


# ---------------------------------------------------------------------------------------------
# DST: properties over the whole corpus, against independent zoneinfo oracles
# ---------------------------------------------------------------------------------------------

FixedOracle = tuple[int, int, int, frozenset[int] | None]  # h, m, s, ISO weekdays (None = all)
FIXED_ORACLE: dict[str, FixedOracle] = {
    "30 2 * * *": (2, 30, 0, None),
    "0 2 * * *": (2, 0, 0, None),
    "0 0 * * *": (0, 0, 0, None),
    "45 1 * * *": (1, 45, 0, None),
    "0 9 * * 1-5": (9, 0, 0, frozenset({1, 2, 3, 4, 5})),
    "30 1 * * *": (1, 30, 0, None),
    "15 30 2 * * *": (2, 30, 15, None),
    "30 23 * * *": (23, 30, 0, None),
}
FREQUENT_ORACLE: dict[str, tuple[int, int, Callable[[datetime], bool]]] = {
    # expression: (grid step for the oracle scan, nominal step, wall-clock predicate)
    "*/15 * * * *": (60, 900, lambda w: w.minute % 15 == 0 and w.second == 0),
    "0 * * * *": (60, 3_600, lambda w: w.minute == 0 and w.second == 0),
    "*/10 * * * * *": (10, 10, lambda w: w.second % 10 == 0),
}


def test_corpus_definition_matches_generator() -> None:
    assert set(FIXED_ORACLE) == set(gen.FIXED)
    assert set(FREQUENT_ORACLE) == {*gen.FREQUENT, gen.DENSE}


def oracle_fixed_instant(zone: ZoneInfo, wall: datetime) -> datetime:
    """First occurrence of ``wall``; if it falls in a gap, the first instant after the gap."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == wall:
        return first
    lo = int(wall.replace(tzinfo=zone, fold=1).timestamp())
    hi = int(wall.replace(tzinfo=zone, fold=0).timestamp())
    while hi - lo > 1:  # smallest instant whose wall clock is past the gap
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, zone).replace(tzinfo=None) >= wall:
            hi = mid
        else:
            lo = mid
    return datetime.fromtimestamp(hi, UTC)


@pytest.mark.parametrize("zone", gen.ZONES)
def test_fixed_jobs_once_per_local_day_for_three_years(zone: str) -> None:
    tz = ZoneInfo(zone)
    start = gen.local_day_start(zone, date(2025, 1, 1))
    end = gen.local_day_start(zone, date(2028, 1, 1))
    n_days = (date(2028, 1, 1) - date(2025, 1, 1)).days
    for expr, (h, m, s, weekdays) in FIXED_ORACLE.items():
        fires = fires_between(parse_cron(expr, zone), start - timedelta(seconds=1), end, 5_000)
        expected = []
        for i in range(n_days):
            d = date(2025, 1, 1) + timedelta(days=i)
            if weekdays is None or d.isoweekday() in weekdays:
                expected.append(oracle_fixed_instant(tz, datetime(d.year, d.month, d.day, h, m, s)))
        assert fires == expected, (zone, expr)
        per_day: dict[date, int] = {}
        for f in fires:
            per_day[f.astimezone(tz).date()] = per_day.get(f.astimezone(tz).date(), 0) + 1
        assert set(per_day.values()) == {1}, (zone, expr)
        assert all(a < b for a, b in itertools.pairwise(fires))


@pytest.mark.parametrize("zone", gen.ZONES)
def test_frequent_jobs_follow_real_time_on_transition_days(zone: str) -> None:
    tz = ZoneInfo(zone)
    transitions = gen.transitions(zone)
    for day in gen.transition_days(zone):
        start = gen.local_day_start(zone, day)
        end = gen.local_day_start(zone, day + timedelta(days=1))
        for expr, (grid, step, predicate) in FREQUENT_ORACLE.items():
            fires = fires_between(parse_cron(expr, zone), start - timedelta(seconds=1), end, 100_000)
            t0, t1 = int(start.timestamp()), int(end.timestamp())
            expected = [
                datetime.fromtimestamp(t, UTC)
                for t in range(t0 - t0 % grid, t1, grid)
                if t >= t0 and predicate(datetime.fromtimestamp(t, tz))
            ]
            assert fires == expected, (zone, day, expr)
            for a, b in itertools.pairwise(fires):
                gap = int((b - a).total_seconds())
                if gap == step:
                    continue
                # only across a transition whose shift is not a multiple of the step (Lord Howe's
                # 30 minutes for an hourly job) may the real gap differ, by exactly the shift
                crossing = [t for t in transitions if a < t <= b]
                assert len(crossing) == 1, (zone, expr, a, b)
                t = crossing[0]
                shift = abs(offset_s(tz, t) - offset_s(tz, t - timedelta(seconds=1)))
                assert shift % step != 0 and gap == step + shift, (zone, expr, a, b)


@pytest.mark.parametrize("zone", gen.ZONES)
def test_prev_count_and_latest_agree_with_forward_iteration(zone: str) -> None:
    rng = random.Random(zone)
    exprs = [*FIXED_ORACLE, "*/15 * * * *", "0 * * * *", "*/10 * * * * *", "* 1,2 * * *", "0 */2 * * *"]
    days = gen.transition_days(zone) or [date(2026, 3, 8)]
    transitions = gen.transitions(zone)
    for expr in exprs:
        spec = parse_cron(expr, zone)
        for day in days:
            start = gen.local_day_start(zone, day) - timedelta(hours=3)
            # the dense job gets 8 h (local 21:00-05:00 covers every corpus transition)
            end = start + timedelta(hours=8 if expr.startswith("*/10") else 30)
            fires = fires_between(spec, start, end, 100_000)
            # a fire's predecessor is the previous fire: the 8 pairs around each transition plus
            # 30 random ones
            pairs = list(itertools.pairwise(fires))
            near = [
                pairs[i]
                for t in transitions
                for i in range(bisect.bisect(fires, t) - 5, bisect.bisect(fires, t) + 3)
                if 0 <= i < len(pairs)
            ]
            for a, b in near + rng.sample(pairs, min(30, len(pairs))):
                assert prev_fire(spec, b) == a, (zone, expr, b)
                assert next_fire(spec, a) == b, (zone, expr, a)
            if fires:
                before_first = prev_fire(spec, fires[0])
                assert before_first is None or before_first <= start
            assert latest_fires_between(spec, start, end, 7) == fires[-7:]
            assert count_fires_between(spec, start, end) == len(fires)
            for _ in range(6):
                a = start + timedelta(seconds=rng.randrange(0, int((end - start).total_seconds())))
                b = min(end, a + timedelta(seconds=rng.randrange(0, 12 * 3600)))
                inside = [f for f in fires if a < f < b]
                assert count_fires_between(spec, a, b) == len(inside), (zone, expr, a, b)
                assert latest_fires_between(spec, a, b, 5) == inside[-5:], (zone, expr, a, b)


def test_count_over_long_windows_matches_enumeration() -> None:
    for zone in ("America/New_York", "Australia/Lord_Howe", "America/Santiago"):
        for expr in ("0 9 * * 1-5", "30 1 * * *", "0 */6 * * *", "0 0 L * *", "0 0 * * 5#2"):
            spec = parse_cron(expr, zone)
            start, end = utc(2025, 1, 1), utc(2027, 12, 31)
            assert count_fires_between(spec, start, end) == len(fires_between(spec, start, end, 10_000))


# ---------------------------------------------------------------------------------------------
# DST: the golden files
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("zone", gen.ZONES)
def test_golden_corpus(zone: str) -> None:
    stored: dict[str, Any] = json.loads(gen.file_for(zone).read_text())
    assert stored == gen.build_zone(zone), (
        f"{zone}: the DST rule output changed; if intended, rerun tests/unit/golden/generate.py "
        "and review the diff"
    )
    expected_days = {"America/Santiago": 9, "Asia/Shanghai": 0}.get(zone, 6)
    assert len(stored["days"]) == expected_days


# ---------------------------------------------------------------------------------------------
# Wall-clock matching agrees with croniter where there is no DST (UTC)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "0 0 13 * FRI",
        "*/7 3-5 1,15,L * *",
        "0 12 * JAN-MAR,DEC SUN,SAT",
        "0 0 1-31 * 1",
        "5 4 * * 5-1",
        "0 0 ? * ?",
        "0 0 L 2 *",
        "30 6 29 2 *",
        "0 0 15W * *",
        "0 0 * * 1#2,1#3",
        "0 0 * * L0",
        "10,20 */20 8 * * MON",
        "59/15 0 1 * *",
        "0 0 1 */5 *",
    ],
)
def test_matching_agrees_with_croniter_in_utc(expression: str) -> None:
    from croniter import croniter

    fields = expression.split()
    raw = " ".join([*fields[1:], fields[0]]) if len(fields) == 6 else expression
    start, end = datetime(2025, 12, 20), datetime(2029, 1, 10)
    it = croniter(raw, start)
    expected = []
    while (t := it.get_next(datetime)) < end:
        expected.append(t.replace(tzinfo=UTC))
    spec = parse_cron(expression)
    got = fires_between(spec, start.replace(tzinfo=UTC), end.replace(tzinfo=UTC), 100_000)
    assert got == expected
    assert count_fires_between(spec, start.replace(tzinfo=UTC), end.replace(tzinfo=UTC)) == len(expected)
    back = latest_fires_between(spec, start.replace(tzinfo=UTC), end.replace(tzinfo=UTC), 50)
    assert back == expected[-50:]
