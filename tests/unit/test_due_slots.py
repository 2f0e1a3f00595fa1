"""Where the due index holds a schedule (edgecron.domain.due_slots) and which slots a scan tick reads.
Expected keys are worked out by hand from the times in each test."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from edgecron.domain.cron import parse_cron
from edgecron.domain.due_slots import (
    DAY_MS,
    HOUR_MS,
    TICK_SLOT,
    Wheel,
    is_exact,
    met_at,
    slot_of,
    walk_moves,
    wheel_of,
    window_ranges,
)

LOOKAHEAD = 80_000  # the look-ahead and a clock margin


def _ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("cron", "wheel"),
    [
        ("0 9 * * *", Wheel.DAY),  # once a day
        ("30 15 9 * * *", Wheel.DAY),
        ("0 9 * * MON-FRI", Wheel.DAY),  # weekdays: read on weekends too, 7 reads per 5 fires
        ("0 9 * * MON", Wheel.DAY),
        ("0 * * * *", Wheel.HOUR),  # hourly
        ("0 9-17 * * *", Wheel.HOUR),  # nine hours a day
        ("15 0 */8 * * *", Wheel.HOUR),  # three hours a day: 8 reads per fire
        ("0 */12 * * *", Wheel.EXACT),  # twice a day: 12 reads per fire would cost more than moving
        ("* * * * *", Wheel.TICK),  # every minute
        ("*/5 * * * *", Wheel.TICK),  # 288 fires a day
        ("*/15 * * * *", Wheel.EXACT),  # 96 fires a day: 15 reads per fire
        ("* * * * * *", Wheel.TICK),  # every second
        ("*/30 0 9 * * *", Wheel.EXACT),  # two fires a day at 09:00
        ("0 0 1 * *", Wheel.EXACT),  # monthly: a daily read for each fire would be 30 reads
        ("0 9 * 6 *", Wheel.EXACT),  # June only
        ("0 9 L * *", Wheel.EXACT),
        ("0 9 * * 5#3", Wheel.EXACT),
    ],
)
def test_the_wheel_follows_how_often_the_expression_fires(cron: str, wheel: Wheel) -> None:
    assert wheel_of(parse_cron(cron)) == wheel


def test_a_one_time_schedule_keeps_its_exact_time() -> None:
    assert wheel_of(None) == Wheel.EXACT
    at = _ms(2026, 12, 5, 9, 0, 0)
    assert slot_of(Wheel.EXACT, at, at - DAY_MS, LOOKAHEAD) == at


def test_a_daily_fire_is_keyed_by_its_time_of_day_and_the_next_day_has_the_same_key() -> None:
    written = _ms(2026, 12, 4, 12, 0, 0)
    today, tomorrow = _ms(2026, 12, 4, 15, 30, 5), _ms(2026, 12, 5, 15, 30, 5)
    key = slot_of(Wheel.DAY, today, written, LOOKAHEAD)
    assert not is_exact(key)
    assert key == slot_of(Wheel.DAY, tomorrow, today, LOOKAHEAD)
    # 15:30:05 is 55,805,000 ms into the day; the day wheel's keys start at -300,000,000
    assert key == -300_000_000 + 55_805_000


def test_an_hourly_fire_is_keyed_by_its_time_of_the_hour() -> None:
    written = _ms(2026, 12, 4, 12, 0, 0)
    key = slot_of(Wheel.HOUR, _ms(2026, 12, 4, 13, 20, 0), written, LOOKAHEAD)
    assert key == -200_000_000 + 20 * 60_000
    assert key == slot_of(Wheel.HOUR, _ms(2026, 12, 4, 14, 20, 0), written, LOOKAHEAD)


def test_a_fire_within_the_look_ahead_of_its_write_keeps_its_exact_time() -> None:
    """The last complete tick's window may already have passed its slot: exact keys are read up to
    every tick's horizon."""
    written = _ms(2026, 12, 4, 12, 0, 0)
    soon = written + LOOKAHEAD
    assert slot_of(Wheel.DAY, soon, written, LOOKAHEAD) == soon
    assert not is_exact(slot_of(Wheel.DAY, soon + 1, written, LOOKAHEAD))
    assert (
        slot_of(Wheel.TICK, written + 1_000, written, LOOKAHEAD) == written + 1_000
    )  # an every-tick one too
    assert slot_of(Wheel.TICK, soon + 1, written, LOOKAHEAD) == TICK_SLOT


def test_the_walks_own_advance_puts_an_every_tick_schedule_on_its_key_at_once() -> None:
    """The walk goes on from where it dispatched, so the next fire a second later needs no exact key."""
    written = _ms(2026, 12, 4, 12, 0, 0)
    assert slot_of(Wheel.TICK, written + 1_000, written, LOOKAHEAD, walked_to=written) == TICK_SLOT
    assert slot_of(Wheel.DAY, written + 1_000, written, LOOKAHEAD, walked_to=written) == written + 1_000


def test_the_walks_own_write_of_a_fire_not_after_its_mark_keeps_the_exact_key() -> None:
    """A catch-up behind the walk's mark (a schedule whose look-ahead dispatch died): read at the
    every-tick key, the fire would count as passed by the mark, so a tick that dies before moving
    it on would leave that fire time with no Fire. The exact key keeps it owed."""
    written = _ms(2026, 12, 4, 12, 1, 0)
    mark = written + 10_000
    assert slot_of(Wheel.TICK, mark, written, LOOKAHEAD, walked_to=mark) == mark
    assert slot_of(Wheel.TICK, written, written, LOOKAHEAD, walked_to=mark) == written
    assert slot_of(Wheel.TICK, mark + 1, written, LOOKAHEAD, walked_to=mark) == TICK_SLOT


def test_an_every_tick_schedule_more_than_a_day_from_its_next_fire_keeps_the_exact_time() -> None:
    """A far start_at, or a schedule that fires every 5 minutes on Mondays only, between Mondays:
    read when due rather than at every tick meanwhile."""
    written = _ms(2026, 12, 4, 12, 0, 0)
    assert slot_of(Wheel.TICK, written + DAY_MS, written, LOOKAHEAD) == TICK_SLOT
    assert slot_of(Wheel.TICK, written + DAY_MS + 1, written, LOOKAHEAD) == written + DAY_MS + 1
    assert (
        slot_of(Wheel.TICK, written + DAY_MS + 1, written, LOOKAHEAD, walked_to=written)
        == written + DAY_MS + 1
    )
    assert wheel_of(parse_cron("*/5 * * * MON")) == Wheel.TICK


def test_a_tick_reads_the_tick_key_and_exact_keys_up_to_its_horizon_in_one_range() -> None:
    start, until = _ms(2026, 12, 4, 12, 0, 0), _ms(2026, 12, 4, 12, 1, 10)
    ranges = window_ranges(start, until)
    assert ranges[0] == (TICK_SLOT, until) == (0, until)
    assert not is_exact(TICK_SLOT) and is_exact(until)


def test_a_tick_reads_the_wheel_slots_its_window_passes() -> None:
    start, until = _ms(2026, 12, 4, 12, 0, 0), _ms(2026, 12, 4, 12, 1, 10)
    ranges = window_ranges(start, until)[1:]
    hour_lo, hour_hi = -200_000_000 + 1, -200_000_000 + 70_000
    day_lo, day_hi = -300_000_000 + 12 * HOUR_MS + 1, -300_000_000 + 12 * HOUR_MS + 70_000
    assert ranges == [(hour_lo, hour_hi), (day_lo, day_hi)]
    fire = _ms(2026, 12, 4, 12, 1, 0)  # a fire inside the window, on each wheel
    for wheel, (lo, hi) in ((Wheel.HOUR, ranges[0]), (Wheel.DAY, ranges[1])):
        assert lo <= slot_of(wheel, fire, fire - DAY_MS, LOOKAHEAD) <= hi


def test_a_window_over_midnight_reads_both_ends_of_the_day_wheel() -> None:
    start, until = _ms(2026, 12, 4, 23, 59, 30), _ms(2026, 12, 5, 0, 0, 40)
    day = window_ranges(start, until)[-2:]
    assert day == [
        (-300_000_000 + DAY_MS - 30_000 + 1, -300_000_000 + DAY_MS - 1),
        (-300_000_000, -300_000_000 + 40_000),
    ]


def test_a_window_of_a_whole_period_reads_the_whole_wheel_from_where_it_starts() -> None:
    """After an outage the first tick reads every slot: the lagging schedules are caught up. Each
    range goes in the order the window meets its slots."""
    start = _ms(2026, 12, 4, 12, 0, 0)
    ranges = window_ranges(start, start + 2 * HOUR_MS)
    assert ranges[1:3] == [(-200_000_000 + 1, -200_000_000 + HOUR_MS - 1), (-200_000_000, -200_000_000)]
    assert ranges[-1] == (-300_000_000 + 12 * HOUR_MS + 1, -300_000_000 + 14 * HOUR_MS)
    whole = window_ranges(start, start + DAY_MS)[-2:]
    assert whole == [
        (-300_000_000 + 12 * HOUR_MS + 1, -300_000_000 + DAY_MS - 1),
        (-300_000_000, -300_000_000 + 12 * HOUR_MS),
    ]


def test_a_wheel_slot_is_met_at_its_first_time_after_the_window_starts() -> None:
    start = _ms(2026, 12, 4, 12, 0, 0)
    ten = slot_of(Wheel.DAY, _ms(2026, 12, 5, 10, 0, 0), 0, LOOKAHEAD)
    assert met_at(ten, start) == _ms(2026, 12, 5, 10, 0, 0)  # 10:00 comes round tomorrow
    half_past = slot_of(Wheel.HOUR, _ms(2026, 12, 4, 12, 30, 0), 0, LOOKAHEAD)
    assert met_at(half_past, start) == _ms(2026, 12, 4, 12, 30, 0)
    assert met_at(slot_of(Wheel.DAY, start, 0, LOOKAHEAD), start) == start + DAY_MS  # just passed
    assert met_at(TICK_SLOT, start) is None and met_at(start + 5, start) is None


def test_the_slots_of_each_range_are_met_in_key_order() -> None:
    start = _ms(2026, 12, 4, 23, 0, 0)
    for lo, hi in window_ranges(start, start + DAY_MS + HOUR_MS)[1:]:
        met = [met_at(k, start) for k in range(lo, hi + 1, 997_001)] + [met_at(hi, start)]
        assert met == sorted(met)  # type: ignore[type-var]


def test_an_empty_window_reads_no_wheel() -> None:
    start = _ms(2026, 12, 4, 12, 0, 0)
    assert window_ranges(start, start) == [(TICK_SLOT, start)]


def test_the_key_ranges_of_the_wheels_never_meet() -> None:
    day = window_ranges(0, DAY_MS)[-1]
    hour = window_ranges(0, DAY_MS)[-2]
    assert day[1] < hour[0] and hour[1] < TICK_SLOT == 0


def test_the_walk_moves_schedules_on_the_wheels_and_the_every_tick_key_but_not_exact_ones() -> None:
    assert walk_moves(-300_000_000) and walk_moves(-200_000_000 + 5) and walk_moves(TICK_SLOT)
    assert not walk_moves(1_780_000_000_000)  # an exact time
    assert not walk_moves(None)
