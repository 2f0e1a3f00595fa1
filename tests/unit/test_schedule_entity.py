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
