"""The Schedule entity: the rules dispatch reads off it."""

from __future__ import annotations

import dataclasses

from edgecron.domain.schedules import Schedule
from edgecron.domain.vocabulary import OverlapPolicy, ScheduleStatus

FIRE_AT = 1_780_000_000_000


def schedule(**changes: object) -> Schedule:
    base = Schedule(
        app_id="app_1",
        schedule_id="sch_1",
        created_at=1,
        updated_at=2,
        cron="0 * * * *",
        endpoint_ids=("ep_1",),
        next_fire_at=FIRE_AT,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_only_an_active_schedule_whose_next_fire_time_is_this_one_may_fire_it() -> None:
    assert schedule().fires_next_at(FIRE_AT)
    assert not schedule().fires_next_at(FIRE_AT + 1000)  # moved on by another dispatcher
    assert not schedule(status=ScheduleStatus.PAUSED).fires_next_at(FIRE_AT)
    assert not schedule(next_fire_at=None).fires_next_at(FIRE_AT)


def test_a_schedule_without_listed_endpoints_is_a_broadcast() -> None:
    assert schedule(endpoint_ids=()).is_broadcast
    assert not schedule().is_broadcast


def test_the_next_fire_after_a_time_follows_the_cron_and_stops_at_end_at() -> None:
    hourly = schedule(cron="0 * * * *", timezone="UTC")
    assert hourly.next_after(FIRE_AT) == FIRE_AT + 3_600_000 - FIRE_AT % 3_600_000
    ended = schedule(cron="0 * * * *", end_at=FIRE_AT)
    assert ended.next_after(FIRE_AT) is None  # past end_at: nothing left in the window
    assert ended.within_window(FIRE_AT) == FIRE_AT  # end_at itself still fires
    assert schedule(cron=None, at=FIRE_AT).next_after(FIRE_AT - 1) is None  # one-time: no next


def test_only_a_cron_schedule_creates_its_fires_under_an_overlap_policy() -> None:
    assert schedule(overlap_policy=OverlapPolicy.SKIP).fire_overlap == OverlapPolicy.SKIP
    assert schedule(overlap_policy=None).fire_overlap is None
    assert schedule(overlap_policy=OverlapPolicy.ALLOW).fire_overlap is None
    assert schedule(cron=None, at=FIRE_AT, overlap_policy=OverlapPolicy.BUFFER_ONE).fire_overlap is None


HOUR_MS = 3_600_000
ON_THE_HOUR = FIRE_AT - FIRE_AT % HOUR_MS  # a fire time of "0 * * * *"


def test_a_walk_past_stored_fire_times_moves_the_next_fire_to_the_first_after_it() -> None:
    hourly = schedule(next_fire_at=ON_THE_HOUR, last_fire_at=ON_THE_HOUR - HOUR_MS)
    walked = hourly.walked_past(ON_THE_HOUR + 3 * HOUR_MS + 70_000)
    assert walked.next_fire_at == ON_THE_HOUR + 4 * HOUR_MS
    assert walked.last_fire_at == ON_THE_HOUR + 3 * HOUR_MS  # the last fire the walk passed
    assert hourly.walked_past(ON_THE_HOUR).next_fire_at == ON_THE_HOUR + HOUR_MS  # the stored one is done


def test_a_stored_next_fire_the_walk_has_not_reached_stands() -> None:
    """A resume or an edit stores a next fire after the walk: the walk has not passed it yet."""
    hourly = schedule(next_fire_at=ON_THE_HOUR)
    assert hourly.walked_past(ON_THE_HOUR - 1) == hourly


def test_a_walk_moves_neither_a_paused_nor_a_one_time_schedule_nor_one_whose_window_ended() -> None:
    assert (
        schedule(next_fire_at=ON_THE_HOUR, status=ScheduleStatus.PAUSED)
        .walked_past(ON_THE_HOUR + HOUR_MS)
        .next_fire_at
        == ON_THE_HOUR
    )
    one_time = schedule(cron=None, at=ON_THE_HOUR, next_fire_at=ON_THE_HOUR)
    assert one_time.walked_past(ON_THE_HOUR + HOUR_MS) == one_time
    ending = schedule(next_fire_at=ON_THE_HOUR, end_at=ON_THE_HOUR + HOUR_MS)
    assert ending.walked_past(ON_THE_HOUR + 2 * HOUR_MS) == ending  # its dispatch records the end


def test_a_walk_follows_the_time_zone_across_a_daylight_saving_change() -> None:
    """09:00 in New York: 14:00 UTC on 2027-03-12, 13:00 UTC on 2027-03-15 (the change is on the 14th)."""
    from datetime import UTC, datetime

    def ms(*args: int) -> int:
        return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)

    daily = schedule(cron="0 9 * * *", timezone="America/New_York", next_fire_at=ms(2027, 3, 12, 14))
    walked = daily.walked_past(ms(2027, 3, 14, 20))
    assert walked.next_fire_at == ms(2027, 3, 15, 13)
    assert walked.last_fire_at == ms(2027, 3, 14, 13)


HOUR = 3_600_000
TOP = 1_780_002_000_000  # a whole hour (UTC): a fire time of "0 * * * *"


def test_a_timing_fires_at_its_cron_times_inside_its_window_and_a_one_time_schedule_at_its_time() -> None:
    assert schedule().has_fire_at(TOP) and not schedule().has_fire_at(TOP + 60_000)
    assert not schedule(start_at=TOP + 1).has_fire_at(TOP)
    assert not schedule(end_at=TOP - 1).has_fire_at(TOP)
    one_time = schedule(cron=None, at=TOP + 123)
    assert one_time.has_fire_at(TOP + 123) and not one_time.has_fire_at(TOP)


def test_an_edit_withholds_only_fires_dispatched_before_it_due_after_it_that_the_timing_lacks() -> None:
    edited = schedule(cron="30 * * * *", timing_since=TOP - HOUR // 2)  # edited at :30 of the hour before
    assert edited.withholds(TOP, dispatched_at_ms=TOP - HOUR // 2 - 10_000)  # dispatched before the edit
    assert not edited.withholds(TOP, dispatched_at_ms=TOP - HOUR // 2 + 1)  # by the timing it has
    assert not edited.withholds(TOP + HOUR // 2, dispatched_at_ms=TOP - HOUR)  # the timing has it
    assert not edited.withholds(TOP - HOUR, dispatched_at_ms=TOP - 2 * HOUR)  # its time came first
    assert not schedule(cron="30 * * * *").withholds(TOP, dispatched_at_ms=0)  # never edited
    back = schedule(timing_since=TOP - 10_000)  # an edit back to "0 * * * *" before the fire
    assert not back.withholds(TOP, dispatched_at_ms=TOP - 60_000)


def test_a_fire_due_inside_a_remembered_pause_came_while_paused_and_one_outside_did_not() -> None:
    paused = schedule().paused_now(TOP)
    assert paused.paused_since == TOP
    assert paused.paused_now(TOP + 5).paused_since == TOP  # pausing again keeps when it began
    resumed = dataclasses.replace(paused, status=ScheduleStatus.PAUSED).resumed_now(TOP + 60_000)
    assert resumed.paused_since is None and resumed.pauses == ((TOP, TOP + 60_000),)
    active = dataclasses.replace(resumed, status=ScheduleStatus.ACTIVE)
    assert active.paused_at(TOP) and active.paused_at(TOP + 59_999)
    assert not active.paused_at(TOP - 1) and not active.paused_at(TOP + 60_000)
    assert schedule(status=ScheduleStatus.PAUSED).paused_at(TOP - HOUR)  # paused now: every time


def test_a_schedule_remembers_its_latest_pauses_only() -> None:
    from edgecron.domain.schedules import PAUSES_KEPT

    s = schedule()
    for n in range(PAUSES_KEPT + 2):
        s = s.paused_now(TOP + n * 1_000).resumed_now(TOP + n * 1_000 + 500)
    assert len(s.pauses) == PAUSES_KEPT
    assert s.pauses[0] == (TOP + 2_000, TOP + 2_500) and not s.paused_at(TOP)
    assert schedule().resumed_now(TOP) == schedule()  # not paused (or paused by an earlier release)
