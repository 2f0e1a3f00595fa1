"""Missed-fire catch-up planning (edgecron.domain.catchup). Every expected number is worked out
by hand in the test, never by calling the code under test."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta

import pytest

from edgecron.domain.catchup import (
    MISSED_CAP,
    CatchUpPlan,
    LateFirePlan,
    MissedPolicy,
    late_run_wake,
    plan_catch_up,
    plan_late_fires,
    policy_of,
    split_started,
)
from edgecron.domain.cron import fires_between, parse_cron

S = timedelta(seconds=1)
M = timedelta(minutes=1)
D = timedelta(days=1)
T0 = datetime(2026, 1, 10, 0, 0, 0, tzinfo=UTC)

EVERY_SECOND = parse_cron("* * * * * *")
EVERY_MINUTE = parse_cron("* * * * *")
DAILY_9 = parse_cron("0 9 * * *")


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def plan(
    spec_or_none: object, nft: datetime, now: datetime, policy: str, cap: int = MISSED_CAP
) -> CatchUpPlan:
    result = plan_catch_up(spec_or_none, None, nft, now, policy, cap)  # type: ignore[arg-type]
    assert result is not None
    return result


# ---------------------------------------------------------------------------------------------
# every second
# ---------------------------------------------------------------------------------------------


def test_every_second_one_minute_down() -> None:
    # pending: T0, T0+1s, ..., T0+59s = 60 fire times; T0+60s == now is still due
    p = plan(EVERY_SECOND, T0, T0 + 60 * S, "RUN_ONCE")
    assert p.dispatch == T0 + 59 * S
    assert len(p.missed) == 59 and p.missed[0] == T0 and p.missed[-1] == T0 + 58 * S
    assert p.left_out == 0 and p.missed_total == 59
    assert p.next_fire == T0 + 60 * S

    s = plan(EVERY_SECOND, T0, T0 + 60 * S, "SKIP")
    assert s.dispatch is None
    assert len(s.missed) == 60 and s.missed[0] == T0 and s.missed[-1] == T0 + 59 * S
    assert s.left_out == 0
    assert s.next_fire == T0 + 60 * S


def test_every_second_one_day_down() -> None:
    # 86 400 pending; RUN_ONCE lists 100 of the 86 399 others (the newest), SKIP 100 of 86 400
    p = plan(EVERY_SECOND, T0, T0 + D, "RUN_ONCE")
    assert p.dispatch == T0 + D - S
    assert len(p.missed) == 100
    assert p.missed[0] == T0 + D - 101 * S and p.missed[-1] == T0 + D - 2 * S
    assert p.left_out == 86_400 - 1 - 100
    assert p.next_fire == T0 + D

    s = plan(EVERY_SECOND, T0, T0 + D, "SKIP")
    assert s.dispatch is None
    assert s.missed[0] == T0 + D - 100 * S and s.missed[-1] == T0 + D - S and len(s.missed) == 100
    assert s.left_out == 86_400 - 100


def test_every_second_thirty_days_down_is_cheap() -> None:
    now = T0 + 30 * D
    started = time.perf_counter()
    p = plan(EVERY_SECOND, T0, now, "RUN_ONCE")
    elapsed = time.perf_counter() - started
    print(f"plan_catch_up every-second 30 days: {elapsed * 1e3:.2f} ms")
    assert elapsed < 2.0  # generous; measured ~0.5 ms (see python -m edgecron.domain.catchup)
    assert p.dispatch == now - S
    assert len(p.missed) == 100 and p.missed[0] == now - 101 * S and p.missed[-1] == now - 2 * S
    assert p.left_out == 30 * 86_400 - 101
    assert p.next_fire == now

    s = plan(EVERY_SECOND, T0, now, "SKIP")
    assert s.dispatch is None and len(s.missed) == 100 and s.missed[-1] == now - S
    assert s.left_out == 30 * 86_400 - 100


def test_every_second_thirty_days_across_a_dst_change_counts_real_seconds() -> None:
    # New York falls back on 2026-11-01: an every-second job follows real time, so 30 real days
    # are 2 592 000 fire times, the repeated hour included
    spec = parse_cron("* * * * * *", "America/New_York")
    nft = utc(2026, 10, 15, 12)
    now = nft + 30 * D
    p = plan(spec, nft, now, "RUN_ONCE")
    assert p.dispatch == now - S and p.left_out == 30 * 86_400 - 101
    # spring forward 2026-03-08 01:00-04:00 local: 01:00 EST (06:00Z) .. 04:00 EDT (08:00Z)
    spring = plan(spec, utc(2026, 3, 8, 6), utc(2026, 3, 8, 8), "RUN_ONCE")
    assert spring.dispatch == utc(2026, 3, 8, 7, 59, 59)
    assert spring.left_out == 2 * 3_600 - 101


def test_fraction_of_a_second() -> None:
    # now = T0 + 60.5 s: T0+60s < now is missed too; the next fire time is T0+61s
    p = plan(EVERY_SECOND, T0, T0 + 60 * S + timedelta(milliseconds=500), "SKIP")
    assert len(p.missed) == 61 and p.missed[-1] == T0 + 60 * S
    assert p.next_fire == T0 + 61 * S
    # a stored next_fire_time off the grid (e.g. left over from an edit) is still pending
    odd = T0 + timedelta(milliseconds=500)
    q = plan(EVERY_SECOND, odd, T0 + 3 * S, "RUN_ONCE")
    assert q.dispatch == T0 + 2 * S and q.missed == [odd, T0 + S] and q.left_out == 0


# ---------------------------------------------------------------------------------------------
# every minute
# ---------------------------------------------------------------------------------------------


def test_every_minute_one_minute_down() -> None:
    # only T0 is pending at T0+60s (T0+1min == now is still due): not lagging
    assert plan_catch_up(EVERY_MINUTE, None, T0, T0 + M, "RUN_ONCE") is None
    assert plan_catch_up(EVERY_MINUTE, None, T0, T0 + M, "SKIP") is None
    # 90 s down: T0 and T0+1min pending
    p = plan(EVERY_MINUTE, T0, T0 + 90 * S, "RUN_ONCE")
    assert p.dispatch == T0 + M and p.missed == [T0] and p.left_out == 0
    assert p.next_fire == T0 + 2 * M
    s = plan(EVERY_MINUTE, T0, T0 + 90 * S, "SKIP")
    assert s.dispatch is None and s.missed == [T0, T0 + M] and s.next_fire == T0 + 2 * M


def test_every_minute_one_day_down() -> None:
    # 1 440 pending
    p = plan(EVERY_MINUTE, T0, T0 + D, "RUN_ONCE")
    assert p.dispatch == T0 + 1_439 * M
    assert len(p.missed) == 100 and p.missed[0] == T0 + 1_339 * M and p.missed[-1] == T0 + 1_438 * M
    assert p.left_out == 1_440 - 1 - 100
    s = plan(EVERY_MINUTE, T0, T0 + D, "SKIP")
    assert s.missed[0] == T0 + 1_340 * M and s.missed[-1] == T0 + 1_439 * M
    assert s.left_out == 1_440 - 100
    assert s.next_fire == T0 + D


def test_every_minute_thirty_days_down() -> None:
    p = plan(EVERY_MINUTE, T0, T0 + 30 * D, "RUN_ONCE")
    assert p.dispatch == T0 + 30 * D - M
    assert p.left_out == 30 * 1_440 - 101
    s = plan(EVERY_MINUTE, T0, T0 + 30 * D, "SKIP")
    assert s.left_out == 30 * 1_440 - 100 and s.missed[-1] == T0 + 30 * D - M


# ---------------------------------------------------------------------------------------------
# daily
# ---------------------------------------------------------------------------------------------


def test_daily_short_outages_are_not_lagging() -> None:
    nft = utc(2026, 1, 10, 9)
    assert plan_catch_up(DAILY_9, None, nft, nft + M, "RUN_ONCE") is None
    assert plan_catch_up(DAILY_9, None, nft, nft + D, "SKIP") is None  # 2026-01-11 09:00 == now
    p = plan(DAILY_9, nft, nft + D + S, "RUN_ONCE")
    assert p.dispatch == utc(2026, 1, 11, 9) and p.missed == [nft] and p.left_out == 0
    assert p.next_fire == utc(2026, 1, 12, 9)


def test_daily_thirty_days_down() -> None:
    nft = utc(2026, 1, 10, 9)
    now = nft + 30 * D  # 2026-02-09 09:00: pending 01-10 .. 02-08 = 30 fire times
    p = plan(DAILY_9, nft, now, "RUN_ONCE")
    assert p.dispatch == utc(2026, 2, 8, 9)
    assert len(p.missed) == 29 and p.missed[0] == nft and p.missed[-1] == utc(2026, 2, 7, 9)
    assert p.left_out == 0 and p.next_fire == now
    s = plan(DAILY_9, nft, now, "SKIP")
    assert len(s.missed) == 30 and s.missed[-1] == utc(2026, 2, 8, 9) and s.left_out == 0
    assert s.next_fire == now


def test_daily_cap() -> None:
    nft = utc(2026, 1, 1, 9)
    now = utc(2026, 7, 20, 10)  # Jan 31 + Feb 28 + Mar 31 + Apr 30 + May 31 + Jun 30 + Jul 20 = 201
    p = plan(DAILY_9, nft, now, "RUN_ONCE")
    assert p.dispatch == utc(2026, 7, 20, 9)
    assert len(p.missed) == 100 and p.missed[-1] == utc(2026, 7, 19, 9)
    assert p.missed[0] == utc(2026, 7, 19, 9) - 99 * D
    assert p.left_out == 201 - 1 - 100
    s = plan(DAILY_9, nft, now, "SKIP", cap=10)
    assert len(s.missed) == 10 and s.left_out == 191
    z = plan(DAILY_9, nft, now, "RUN_ONCE", cap=0)
    assert z.missed == [] and z.left_out == 200 and z.dispatch == utc(2026, 7, 20, 9)


# ---------------------------------------------------------------------------------------------
# DST days in non-UTC zones
# ---------------------------------------------------------------------------------------------


def test_fixed_time_job_across_autumn_in_new_york() -> None:
    spec = parse_cron("30 1 * * *", "America/New_York")
    # Oct 30, 31, Nov 1 at 01:30 EDT (05:30Z; on Nov 1 the first occurrence only), Nov 2, 3 at
    # 01:30 EST (06:30Z)
    p = plan(spec, utc(2026, 10, 30, 5, 30), utc(2026, 11, 3, 12), "RUN_ONCE")
    assert p.dispatch == utc(2026, 11, 3, 6, 30)
    assert p.missed == [
        utc(2026, 10, 30, 5, 30),
        utc(2026, 10, 31, 5, 30),
        utc(2026, 11, 1, 5, 30),
        utc(2026, 11, 2, 6, 30),
    ]
    assert p.left_out == 0 and p.next_fire == utc(2026, 11, 4, 6, 30)


def test_fixed_time_job_across_spring_in_new_york_with_counting() -> None:
    spec = parse_cron("30 2 * * *", "America/New_York")
    nft = utc(2026, 3, 1, 7, 30)  # 02:30 EST
    now = utc(2026, 3, 31, 12)
    # one fire per day Mar 1..31 = 31; Mar 8 at 03:00 EDT = 07:00Z; from Mar 9 at 06:30Z
    p = plan(spec, nft, now, "RUN_ONCE", cap=25)
    assert p.dispatch == utc(2026, 3, 31, 6, 30)
    assert len(p.missed) == 25 and p.missed[0] == utc(2026, 3, 6, 7, 30)
    assert utc(2026, 3, 8, 7, 0) in p.missed and p.missed[-1] == utc(2026, 3, 30, 6, 30)
    assert p.left_out == 31 - 1 - 25
    q = plan(spec, nft, now, "SKIP", cap=5)  # the 26 older ones (Mar 1..26) are counted
    assert q.missed[0] == utc(2026, 3, 27, 6, 30) and q.left_out == 26


def test_frequent_job_across_autumn_in_new_york() -> None:
    spec = parse_cron("*/15 * * * *", "America/New_York")
    # 00:00 EDT (04:00Z) .. 04:00 EST (09:00Z): 5 real hours = 20 fire times, the repeated
    # 01:xx hour twice
    s = plan(spec, utc(2026, 11, 1, 4), utc(2026, 11, 1, 9), "SKIP")
    assert len(s.missed) == 20 and s.left_out == 0
    assert s.missed[0] == utc(2026, 11, 1, 4) and s.missed[-1] == utc(2026, 11, 1, 8, 45)
    assert all(b - a == 15 * M for a, b in itertools.pairwise(s.missed))
    assert s.next_fire == utc(2026, 11, 1, 9)


def test_santiago_midnight_job_across_spring_gap() -> None:
    spec = parse_cron("0 0 * * *", "America/Santiago")
    # Sep 4, 5 at 00:00 -04 (04:00Z); Sep 6 midnight missing -> 01:00 -03 (04:00Z); Sep 7, 8 at
    # 00:00 -03 (03:00Z)
    s = plan(spec, utc(2026, 9, 4, 4), utc(2026, 9, 8, 12), "SKIP")
    assert s.missed == [
        utc(2026, 9, 4, 4),
        utc(2026, 9, 5, 4),
        utc(2026, 9, 6, 4),
        utc(2026, 9, 7, 3),
        utc(2026, 9, 8, 3),
    ]
    assert s.dispatch is None and s.next_fire == utc(2026, 9, 9, 3)


# ---------------------------------------------------------------------------------------------
# one-time schedules, not lagging, arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("outage", [M, D, 30 * D])
def test_one_time(outage: timedelta) -> None:
    at = T0
    run = plan_catch_up(None, at, at, at + outage, "RUN_ONCE")
    assert run == CatchUpPlan(dispatch=at, missed=[], left_out=0, next_fire=None)
    skip = plan_catch_up(None, at, at, at + outage, "SKIP")
    assert skip == CatchUpPlan(dispatch=None, missed=[at], left_out=0, next_fire=None)
    assert plan_catch_up(None, at, at, at + outage, "SKIP", cap=0) == CatchUpPlan(None, [], 1, None)


def test_not_lagging() -> None:
    assert plan_catch_up(None, T0, T0, T0, "RUN_ONCE") is None  # at == now: still due
    assert plan_catch_up(None, T0 + S, T0 + S, T0, "SKIP") is None
    assert plan_catch_up(EVERY_SECOND, None, T0, T0, "RUN_ONCE") is None
    assert plan_catch_up(EVERY_SECOND, None, T0 + M, T0, "RUN_ONCE") is None
    assert plan_catch_up(EVERY_SECOND, None, T0, T0 + S, "RUN_ONCE") is None  # just T0 pending


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="policy"):
        plan_catch_up(EVERY_SECOND, None, T0, T0 + D, "RUN_ALL")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cap"):
        plan_catch_up(EVERY_SECOND, None, T0, T0 + D, "SKIP", cap=-1)
    with pytest.raises(ValueError, match="not both"):
        plan_catch_up(EVERY_SECOND, T0, T0, T0 + D, "SKIP")
    with pytest.raises(ValueError, match="needs at"):
        plan_catch_up(None, None, T0, T0 + D, "SKIP")
    with pytest.raises(ValueError, match="timezone-aware"):
        plan_catch_up(EVERY_SECOND, None, T0, datetime(2026, 2, 1), "SKIP")


@pytest.mark.parametrize(
    ("expr", "zone"),
    [
        ("*/7 * * * *", "Europe/London"),
        ("0 9 * * 1-5", "Europe/Berlin"),
        ("30 2 * * *", "Australia/Lord_Howe"),
        ("0,30 * * * *", "Australia/Lord_Howe"),
        ("30 23 * * *", "America/Santiago"),
    ],
)
def test_totals_match_enumeration(expr: str, zone: str) -> None:
    # around transitions: March-April and September-November 2026
    spec = parse_cron(expr, zone)
    for nft, now in [(utc(2026, 3, 1), utc(2026, 4, 20)), (utc(2026, 9, 1), utc(2026, 11, 10))]:
        first = fires_between(spec, nft - S, now, 1)[0]
        pending = fires_between(spec, first - S, now, 100_000)
        for policy in ("RUN_ONCE", "SKIP"):
            p = plan(spec, first, now, policy, cap=7)
            assert p.missed_total + (1 if p.dispatch else 0) == len(pending)
            if policy == "RUN_ONCE":
                assert p.dispatch == pending[-1] and p.missed == pending[-8:-1]
            else:
                assert p.missed == pending[-7:]


# ---------------------------------------------------------------------------------------------
# late fires: dispatched, but their messages were lost before any run started
# ---------------------------------------------------------------------------------------------

EVERY_10S = parse_cron("*/10 * * * * *")


def ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def test_late_run_once_delivers_the_newest_if_it_is_still_the_latest_fire_time() -> None:
    late = [ms(T0), ms(T0 + 10 * S)]
    got = plan_late_fires(EVERY_10S, late, T0 + 15 * S, "RUN_ONCE", later_fire_ran=False)
    assert got == LateFirePlan(run_late=[ms(T0 + 10 * S)], missed=[ms(T0)])


def test_late_run_once_misses_all_when_a_later_fire_time_has_passed() -> None:
    late = [ms(T0 + 10 * S), ms(T0)]
    got = plan_late_fires(EVERY_10S, late, T0 + 25 * S, "RUN_ONCE", later_fire_ran=False)
    assert got == LateFirePlan(run_late=[], missed=[ms(T0), ms(T0 + 10 * S)])  # T0+20 s has passed


def test_late_run_once_misses_all_when_a_later_fire_ran() -> None:
    got = plan_late_fires(EVERY_10S, [ms(T0)], T0 + 5 * S, "RUN_ONCE", later_fire_ran=True)
    assert got == LateFirePlan(run_late=[], missed=[ms(T0)])


def test_late_skip_misses_all_and_one_time_run_once_runs() -> None:
    assert plan_late_fires(EVERY_10S, [ms(T0)], T0 + 5 * S, "SKIP", later_fire_ran=False) == LateFirePlan(
        run_late=[], missed=[ms(T0)]
    )
    assert plan_late_fires(None, [ms(T0)], T0 + D, "RUN_ONCE", later_fire_ran=False) == LateFirePlan(
        run_late=[ms(T0)], missed=[]
    )
    assert plan_late_fires(None, [], T0, "RUN_ONCE", later_fire_ran=False) == LateFirePlan([], [])
    with pytest.raises(ValueError):
        plan_late_fires(None, [ms(T0)], T0, "ALWAYS", later_fire_ran=False)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# applying a plan, the stored policy, late runs
# ---------------------------------------------------------------------------------------------


def test_a_plan_moves_the_schedule_to_its_dispatch_or_past_now() -> None:
    now = T0 + 10 * M + 30 * S
    run_once = plan(EVERY_MINUTE, T0, now, "RUN_ONCE")
    assert run_once.moves_to == T0 + 10 * M  # the newest pending fire time, dispatched next
    skip = plan(EVERY_MINUTE, T0, now, "SKIP")
    assert skip.moves_to == T0 + 11 * M  # the first fire time after now
    assert not run_once.finishes(one_time=False) and not skip.finishes(one_time=False)


def test_a_skipped_one_time_schedule_finishes_and_one_run_late_does_not() -> None:
    at = T0
    skipped = plan_catch_up(None, at, at, T0 + M, MissedPolicy.SKIP)
    late = plan_catch_up(None, at, at, T0 + M, MissedPolicy.RUN_ONCE)
    assert skipped is not None and skipped.moves_to is None and skipped.finishes(one_time=True)
    assert late is not None and late.moves_to == at and not late.finishes(one_time=True)


def test_the_stored_policy_is_skip_only_when_it_says_so() -> None:
    assert policy_of("SKIP") is MissedPolicy.SKIP
    assert policy_of("RUN_ONCE") is MissedPolicy.RUN_ONCE
    assert policy_of(None) is MissedPolicy.RUN_ONCE
    assert policy_of("run_once_later") is MissedPolicy.RUN_ONCE


def test_a_fire_started_once_any_run_was_attempted_or_taken() -> None:
    started, unstarted = split_started(
        {
            3_000: [("pending", 0), ("cancelled", 0)],  # nothing started
            1_000: [("pending", 0), ("success", 1)],  # one delivered
            2_000: [("pending", 1)],  # attempted once, waiting again
            4_000: [("running", 1)],
            5_000: [("cancelled", 1)],  # cancelled runs never count as started
            0: [],
        }
    )
    assert started == {1_000, 2_000, 4_000}
    assert unstarted == [0, 3_000, 5_000]


REDISPATCH = 300_000
RETENTION = 4 * 86_400_000


def test_a_late_run_is_lost_when_the_queues_hold_nothing_or_its_message_expired() -> None:
    now = 10 * 86_400_000
    assert late_run_wake(now - 400_000, now, 0, RETENTION, REDISPATCH) is None
    assert late_run_wake(now - RETENTION - 1, now, 50, RETENTION, REDISPATCH) is None


def test_a_late_run_behind_a_backlog_is_looked_at_less_and_less_often_until_its_message_expires() -> None:
    now = 10 * 86_400_000
    # sent 400 s ago: look again in 400 s (the time it has waited), at least the redispatch interval
    assert late_run_wake(now - 400_000, now, 50, RETENTION, REDISPATCH) == now + 400_000
    assert late_run_wake(now - 100_000, now, 50, RETENTION, REDISPATCH) == now + REDISPATCH
    # sent 3 days ago: the message expires in 1 day, so look again then, not in 3 days
    sent = now - 3 * 86_400_000
    assert late_run_wake(sent, now, 50, RETENTION, REDISPATCH) == sent + RETENTION
    # the backlog unknown: never judged lost, the wait still grows
    assert late_run_wake(sent, now, None, None, REDISPATCH) == now + 3 * 86_400_000
