"""Generate the DST golden corpus for ``edgecron.domain.cron`` (run once, commit the JSON).

    PYTHONPATH=layers/core .venv/bin/python tests/unit/golden/generate.py            # write files
    PYTHONPATH=layers/core .venv/bin/python tests/unit/golden/generate.py --croniter # + compare

For every DST transition of every corpus zone in 2025-2027 (found by scanning ``utcoffset``), the
files hold the fires of each corpus expression on the affected local day(s), as UTC and local
ISO strings. The every-10-seconds expression is stored as a count, a SHA-256 of the full list and
the fires within 60 s of the transition, to keep the files small.

``tests/unit/test_cron.py`` recomputes the same data with the module and compares, so any change
to the DST rule shows up as a diff. This file is imported by that test: keep it side-effect free.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from edgecron.domain.cron import CronSpec, fires_between, parse_cron

GOLDEN_DIR = Path(__file__).resolve().parent
ZONES = (
    "America/New_York",
    "Europe/London",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Asia/Shanghai",
)
YEARS = (2025, 2027)
FIXED = (
    "30 2 * * *",
    "0 2 * * *",
    "0 0 * * *",
    "45 1 * * *",
    "0 9 * * 1-5",
    "30 1 * * *",
    "15 30 2 * * *",
    "30 23 * * *",
)
FREQUENT = ("*/15 * * * *", "0 * * * *")
DENSE = "*/10 * * * * *"  # every 10 s: transition days only, stored as a digest
EXPRESSIONS = (*FIXED, *FREQUENT, DENSE)
NEAR = timedelta(seconds=60)


def file_for(zone: str) -> Path:
    return GOLDEN_DIR / (zone.replace("/", "_") + ".json")


@cache
def transitions(zone: str) -> tuple[datetime, ...]:
    """UTC instants in YEARS where the zone's offset changes (hour scan, then minute scan)."""
    tz = ZoneInfo(zone)
    start = datetime(YEARS[0], 1, 1, tzinfo=UTC) - timedelta(days=1)
    end = datetime(YEARS[1] + 1, 1, 1, tzinfo=UTC) + timedelta(days=1)
    found: list[datetime] = []
    t = start
    prev = t.astimezone(tz).utcoffset()
    while t < end:
        nxt = t + timedelta(hours=1)
        off = nxt.astimezone(tz).utcoffset()
        if off != prev:
            m = t
            while (m + timedelta(minutes=1)).astimezone(tz).utcoffset() == prev:
                m += timedelta(minutes=1)
            found.append(m + timedelta(minutes=1))
        prev = off
        t = nxt
    return tuple(found)


def transition_days(zone: str) -> list[date]:
    """Local dates touched by a transition: the date just before it and the date at it."""
    tz = ZoneInfo(zone)
    days: set[date] = set()
    for t in transitions(zone):
        days.add((t - timedelta(seconds=1)).astimezone(tz).date())
        days.add(t.astimezone(tz).date())
    return sorted(d for d in days if YEARS[0] <= d.year <= YEARS[1])


def local_day_start(zone: str, day: date) -> datetime:
    """The first UTC instant whose local date is >= ``day`` (bisection; handles gaps at 00:00)."""
    tz = ZoneInfo(zone)
    wall = datetime(day.year, day.month, day.day)
    lo = int((wall - datetime(1970, 1, 1)).total_seconds()) - 30 * 3600
    hi = lo + 60 * 3600
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, tz).replace(tzinfo=None) >= wall:
            hi = mid
        else:
            lo = mid
    return datetime.fromtimestamp(hi, UTC)


def day_fires(spec: CronSpec, day: date) -> list[datetime]:
    start = local_day_start(spec.timezone, day)
    end = local_day_start(spec.timezone, day + timedelta(days=1))
    return fires_between(spec, start - timedelta(seconds=1), end, 100_000)


def iso_utc(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def row(t: datetime, tz: ZoneInfo) -> dict[str, str]:
    return {"utc": iso_utc(t), "local": t.astimezone(tz).isoformat()}


def digest(fires: list[datetime]) -> str:
    """SHA-256 of the fires as epoch seconds, one per line."""
    text = "\n".join(str(int(t.timestamp())) for t in fires)
    return hashlib.sha256(text.encode()).hexdigest()


def build_zone(zone: str) -> dict[str, Any]:
    tz = ZoneInfo(zone)
    trans = transitions(zone)
    days_out: list[dict[str, Any]] = []
    for day in transition_days(zone):
        cases: dict[str, Any] = {}
        for expr in EXPRESSIONS:
            spec = parse_cron(expr, zone)
            fires = day_fires(spec, day)
            if expr == DENSE:
                one_s = timedelta(seconds=1)
                near = [
                    t
                    for x in trans
                    for t in fires_between(spec, x - NEAR - one_s, x + NEAR + one_s, 100)
                    if fires[0] <= t <= fires[-1]
                ]
                cases[expr] = {
                    "count": len(fires),
                    "sha256": digest(fires),
                    "first": row(fires[0], tz),
                    "last": row(fires[-1], tz),
                    "near_transition": [row(t, tz) for t in near],
                }
            else:
                cases[expr] = [row(t, tz) for t in fires]
        days_out.append({"date": day.isoformat(), "cases": cases})
    return {
        "zone": zone,
        "years": list(YEARS),
        "generated_by": "tests/unit/golden/generate.py",
        "rule": (
            "fixed-time (hour field not *): once per matching wall time; spring gap -> first "
            "instant after the gap; repeated hour -> first occurrence. frequent (hour field *): "
            "every real instant whose local wall time matches."
        ),
        "transitions": [
            {
                "utc": iso_utc(t),
                "before": (t - timedelta(seconds=1)).astimezone(tz).isoformat(),
                "after": t.astimezone(tz).isoformat(),
            }
            for t in trans
            if YEARS[0] <= t.year <= YEARS[1]
        ],
        "days": days_out,
    }


def _croniter_fires(expr: str, zone: str, start: datetime, end: datetime) -> Iterator[datetime]:
    """What croniter alone produces (tz-aware iteration), for the comparison report."""
    from croniter import croniter

    fields = expr.split()
    if len(fields) == 6:
        expr = " ".join([*fields[1:], fields[0]])
    it = croniter(expr, start.astimezone(ZoneInfo(zone)))
    while True:
        t = it.get_next(datetime).astimezone(UTC)
        if t >= end:
            return
        yield t


def compare_with_croniter() -> None:
    """Print, per expression x zone pair, whether croniter alone differs from this module."""
    wrong = 0
    pairs = 0
    for zone in ZONES:
        for expr in EXPRESSIONS:
            pairs += 1
            spec = parse_cron(expr, zone)
            if expr in FIXED:
                windows = [
                    (
                        local_day_start(zone, date(YEARS[0], 1, 1)),
                        local_day_start(zone, date(YEARS[1] + 1, 1, 1)),
                    )
                ]
            else:
                windows = [
                    (local_day_start(zone, d), local_day_start(zone, d + timedelta(days=1)))
                    for d in transition_days(zone)
                ]
            diff = []
            for start, end in windows:
                ours = fires_between(spec, start - timedelta(seconds=1), end, 10_000_000)
                theirs = list(_croniter_fires(expr, zone, start - timedelta(seconds=1), end))
                if ours != theirs:
                    diff.append((start.date(), len(ours), len(theirs)))
            if diff:
                wrong += 1
                notes = _croniter_extra(expr, zone, windows)
                print(f"DIFF {zone:22} {expr:16} windows={len(diff)} {notes[:4]}")
    print(f"croniter alone differs on {wrong} of {pairs} expression x zone pairs")


def _croniter_extra(expr: str, zone: str, windows: list[tuple[datetime, datetime]]) -> list[str]:
    spec = parse_cron(expr, zone)
    tz = ZoneInfo(zone)
    notes: list[str] = []
    for start, end in windows:
        ours = set(fires_between(spec, start - timedelta(seconds=1), end, 10_000_000))
        theirs_list = list(_croniter_fires(expr, zone, start - timedelta(seconds=1), end))
        theirs = set(theirs_list)
        dup = len(theirs_list) - len(theirs)
        for t in sorted(theirs - ours):
            notes.append(f"+{t.astimezone(tz).isoformat()}")
        for t in sorted(ours - theirs):
            notes.append(f"-{t.astimezone(tz).isoformat()}")
        if dup:
            notes.append(f"dup x{dup}")
    return notes


def main(argv: list[str]) -> None:
    for zone in ZONES:
        data = build_zone(zone)
        file_for(zone).write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
        print(f"wrote {file_for(zone).name}: {len(data['days'])} transition days")
    if "--croniter" in argv:
        compare_with_croniter()


if __name__ == "__main__":
    main(sys.argv[1:])
