"""The scan finds due schedules by slot (domain/due_slots.py): a daily or hourly schedule keeps its
index entry still while it fires, each tick reads the slots its window passes from where the last
complete tick stopped, a tick after an outage reads them all, and a failing schedule holds the
window for its slot. Schedules an earlier release wrote without a slot are given one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import schedules as schedule_data
from edgecron.data.models import FireModel, ScheduleModel
from edgecron.domain import due_slots
from edgecron.domain.vocabulary import ScheduleStatus
from edgecron.services.fires import dispatch, due_walk
from edgecron_testing.aws_fidelity import IndexTime
from edgecron_testing.harness import call_api, invoke
from edgecron_testing.inprocess import due_walk_left_at
from tests.integration.conftest import new_app

T0 = datetime(2026, 12, 2, 9, 0, 0, tzinfo=UTC)
SCAN_EVENT = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


def _scan_at(at: datetime, index_time: IndexTime) -> dict[str, Any]:
    index_time.settle()
    clock.set_clock(clock.FixedClock(at))
    result = invoke("scan", SCAN_EVENT)
    return dict(result or {})


def _create(key: str, **body: Any) -> str:
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/slots"}).body["id"]
    resp = call_api("POST", "/v1/schedules", key=key, body={"endpoint_ids": [ep], **body})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def _row(app_id: str, schedule_id: str) -> ScheduleModel:
    return ScheduleModel.get(app_id, schedule_id, consistent_read=True)


def _fires(schedule_id: str) -> dict[datetime, str]:
    return {clock.from_ms(int(f.fire_at)): f.status for f in FireModel.query(schedule_id)}


_KEYS: dict[str, str] = {}  # the API key of each App the `daily` fixture made


def _key_of(app_id: str) -> str:
    return _KEYS[app_id]


@pytest.fixture
def daily(index_time: IndexTime) -> tuple[str, str]:
    """A daily schedule at 10:00 UTC created at 09:00 (its first fire past a create's look-ahead),
    after a scan at 09:00 that left the mark at its horizon. (App id, schedule id)"""
    clock.set_clock(clock.FixedClock(T0))
    app_id, key = new_app("slots-daily")
    _KEYS[app_id] = key
    schedule_id = _create(key, cron="0 10 * * *")
    due_walk_left_at(clock.to_ms(T0) - 60_000)  # a running stack, whatever ran before in this process
    _scan_at(T0, index_time)
    return app_id, schedule_id


def test_a_daily_schedule_keeps_its_index_entry_while_it_fires_day_after_day(
    daily: tuple[str, str], index_time: IndexTime
) -> None:
    """Nor is the schedule written at all: the walk passing its slot moves it past the fire."""
    app_id, schedule_id = daily
    created = _row(app_id, schedule_id)
    slot = created.due_slot
    assert slot == -300_000_000 + 10 * 3_600_000  # 10:00 on the day wheel
    first = T0.replace(hour=10)
    for day in range(3):
        fire = first + timedelta(days=day)
        _scan_at(fire - timedelta(minutes=30), index_time)  # a tick whose window does not reach it
        assert fire not in _fires(schedule_id)
        _scan_at(fire, index_time)
        row = _row(app_id, schedule_id)
        assert fire in _fires(schedule_id)
        assert (row.next_fire_at, row.due_slot, row.version) == (created.next_fire_at, slot, created.version)
        read = schedule_data.get_timed(app_id, schedule_id, consistent=True)
        assert read is not None and read.next_fire_at == clock.to_ms(fire + timedelta(days=1))
        assert read.last_fire_at == clock.to_ms(fire)
        _scan_at(fire + timedelta(hours=12), index_time)  # ticks through the rest of the day
    shown = call_api("GET", f"/v1/schedules/{schedule_id}", key=_key_of(app_id)).body
    assert shown["next_fire_time"].startswith("2026-12-05T10:00:00")
    assert shown["last_fire_time"].startswith("2026-12-04T10:00:00")


def test_a_tick_after_an_outage_reads_every_slot_and_catches_the_lagging_schedule_up(
    daily: tuple[str, str], index_time: IndexTime
) -> None:
    app_id, schedule_id = daily
    back = T0.replace(hour=13)  # no tick ran from 09:00 to 13:00; the 10:00 fire lagged
    _scan_at(back, index_time)
    fires = _fires(schedule_id)
    assert T0.replace(hour=10) in fires  # run late (RUN_ONCE), not lost
    read = schedule_data.get_timed(app_id, schedule_id, consistent=True)
    assert read is not None and read.next_fire_at == clock.to_ms(T0.replace(hour=10) + timedelta(days=1))


def test_a_first_fire_within_the_look_ahead_of_its_write_is_found_by_its_exact_time(
    index_time: IndexTime,
) -> None:
    """The last tick's window may have passed its slot already: the entry keeps the exact time for
    that fire, and the advance puts it on the wheel."""
    clock.set_clock(clock.FixedClock(T0))
    app_id, key = new_app("slots-exact")
    schedule_id = _create(key, cron="0 10 * * *", status="PAUSED")
    _scan_at(T0.replace(hour=9, minute=59), index_time)  # the window now ends at 10:00:10
    paused = schedule_data.get_timed(app_id, schedule_id, consistent=True)
    assert paused is not None
    fire = T0.replace(hour=10)
    written = replace(
        paused,
        status=ScheduleStatus.ACTIVE,
        next_fire_at=clock.to_ms(fire),
        updated_at=clock.to_ms(T0.replace(hour=9, minute=59, second=30)),
    )
    assert schedule_data.save_if_version(written, paused.version)  # a write that dispatches nothing
    assert _row(app_id, schedule_id).due_slot == clock.to_ms(fire)
    _scan_at(T0.replace(hour=10, minute=0, second=5), index_time)  # its window starts after 10:00:10
    assert fire in _fires(schedule_id)
    assert _row(app_id, schedule_id).due_slot == -300_000_000 + 10 * 3_600_000


def test_the_write_of_a_fire_within_the_look_ahead_keeps_the_exact_time() -> None:
    """At the data layer: `put_new` of a schedule whose next fire lies inside the look-ahead."""
    from edgecron.domain.schedules import Schedule

    now_ms = clock.to_ms(T0)
    soon = now_ms + get_settings().lookahead_ms
    schedule = Schedule(
        app_id="app-slots-write",
        schedule_id="sch-slots-write",
        created_at=now_ms,
        updated_at=now_ms,
        cron="0 * * * *",
        endpoint_ids=("ep",),
        next_fire_at=soon,
    )
    schedule_data.put_new(schedule)
    assert _row(schedule.app_id, schedule.schedule_id).due_slot == soon
    schedule_data.delete(schedule)


def test_a_daylight_saving_change_moves_the_entry_once(index_time: IndexTime) -> None:
    """09:00 in New York is 14:00 UTC before the spring change and 13:00 after it."""
    start = datetime(2027, 3, 13, 12, 0, 0, tzinfo=UTC)  # the change is on 2027-03-14
    clock.set_clock(clock.FixedClock(start))
    app_id, key = new_app("slots-dst")
    schedule_id = _create(key, cron="0 9 * * *", timezone="America/New_York")
    _scan_at(start, index_time)
    assert _row(app_id, schedule_id).due_slot == -300_000_000 + 14 * 3_600_000
    _scan_at(datetime(2027, 3, 13, 14, 0, 0, tzinfo=UTC), index_time)
    row = _row(app_id, schedule_id)
    assert row.next_fire_at == clock.to_ms(datetime(2027, 3, 14, 13, 0, 0, tzinfo=UTC))
    assert row.due_slot == -300_000_000 + 13 * 3_600_000
    _scan_at(datetime(2027, 3, 14, 13, 0, 0, tzinfo=UTC), index_time)
    assert datetime(2027, 3, 14, 13, 0, 0, tzinfo=UTC) in _fires(schedule_id)


def test_a_failing_schedule_owes_its_fire_until_it_is_dispatched(
    daily: tuple[str, str], index_time: IndexTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id, schedule_id = daily
    fire = T0.replace(hour=10)
    real = dispatch.dispatch_fire

    def broken(schedule: Any, *args: Any, **kwargs: Any) -> Any:
        if schedule.schedule_id == schedule_id:
            raise RuntimeError("the schedule's dispatch failed")
        return real(schedule, *args, **kwargs)

    monkeypatch.setattr(dispatch, "dispatch_fire", broken)
    report = _scan_at(fire, index_time)
    assert report["item_failures"] >= 1 and fire not in _fires(schedule_id)
    assert _row(app_id, schedule_id).due_slot == clock.to_ms(fire)  # every tick reads it there
    assert schedule_data.due_mark().mark == clock.to_ms(fire) + get_settings().lookahead_ms  # not held
    monkeypatch.setattr(dispatch, "dispatch_fire", real)
    _scan_at(fire + timedelta(minutes=1), index_time)  # read at its exact time, caught up late
    assert fire in _fires(schedule_id)


def test_a_schedule_that_keeps_failing_owes_its_fire_at_its_exact_time_and_holds_the_window_no_longer(
    daily: tuple[str, str], index_time: IndexTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id, schedule_id = daily
    fire = T0.replace(hour=10)

    def broken(schedule: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the schedule's dispatch failed")

    monkeypatch.setattr(dispatch, "dispatch_fire", broken)
    later = fire + timedelta(minutes=30)
    _scan_at(fire, index_time)
    row = _row(app_id, schedule_id)
    assert (row.next_fire_at, row.due_slot) == (clock.to_ms(fire), clock.to_ms(fire))  # every tick reads it
    _scan_at(later, index_time)
    assert schedule_data.due_mark().mark == clock.to_ms(later) + get_settings().lookahead_ms


def test_a_failing_schedule_whose_owed_fire_cannot_be_recorded_holds_the_window_until_it_can(
    daily: tuple[str, str], index_time: IndexTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id, schedule_id = daily
    fire = T0.replace(hour=10)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the table refused the write")

    monkeypatch.setattr(dispatch, "dispatch_fire", broken)
    monkeypatch.setattr(schedule_data, "owe", broken)
    _scan_at(fire, index_time)
    _scan_at(fire + timedelta(minutes=30), index_time)
    assert schedule_data.due_mark().mark == clock.to_ms(fire) - 1  # held past the usual 10 minutes
    monkeypatch.undo()
    _scan_at(fire + timedelta(minutes=31), index_time)
    assert fire in _fires(schedule_id)  # caught up: RUN_ONCE runs the missed fire late
    read = schedule_data.get_timed(app_id, schedule_id, consistent=True)
    assert read is not None and read.next_fire_at == clock.to_ms(fire + timedelta(days=1))


def test_a_schedule_an_earlier_release_wrote_without_a_slot_is_given_one(index_time: IndexTime) -> None:
    clock.set_clock(clock.FixedClock(T0))
    app_id, key = new_app("slots-backfill")
    schedule_id = _create(key, cron="0 10 * * *")
    row = _row(app_id, schedule_id)
    row.update(actions=[ScheduleModel.due_slot.remove()])  # as an earlier release stored it
    from edgecron_testing.inprocess import forget_due_walk

    forget_due_walk(backfilled=False)
    _scan_at(T0, index_time)
    assert _row(app_id, schedule_id).due_slot == -300_000_000 + 10 * 3_600_000
    assert schedule_data.due_mark().backfilled
    _scan_at(T0.replace(hour=10), index_time)
    assert T0.replace(hour=10) in _fires(schedule_id)


def test_an_hourly_schedule_in_office_hours_is_read_once_an_hour(index_time: IndexTime) -> None:
    clock.set_clock(clock.FixedClock(T0))
    app_id, key = new_app("slots-hourly")
    schedule_id = _create(key, cron="30 9-17 * * *")
    row = _row(app_id, schedule_id)
    assert row.due_slot == -200_000_000 + 30 * 60_000
    for hour in (9, 10, 11):
        _scan_at(T0.replace(hour=hour, minute=30), index_time)
        _scan_at(T0.replace(hour=hour, minute=45), index_time)
    assert {T0.replace(hour=h, minute=30) for h in (9, 10, 11)} <= set(_fires(schedule_id))
    assert due_slots.wheel_of(schedule_data.get_timed(app_id, schedule_id).spec()) == due_slots.Wheel.HOUR  # type: ignore[union-attr]


def test_the_backfill_goes_on_from_where_it_stopped_until_the_table_is_read() -> None:
    """A page at a time, each conditional on the schedule as read; the last call says it is done."""
    clock.set_clock(clock.FixedClock(T0))
    app_id, key = new_app("slots-pages")
    ids = [_create(key, cron="0 10 * * *", name=f"s{i}") for i in range(3)]
    for schedule_id in ids:
        _row(app_id, schedule_id).update(actions=[ScheduleModel.due_slot.remove()])
    start: dict[str, Any] | None = None
    given, calls = 0, 0
    while True:
        done, start = schedule_data.backfill_slots(clock.to_ms(T0), start, 2)
        given, calls = given + done, calls + 1
        if start is None:
            break
    assert given >= 3 and calls >= 2  # two items read per call: three schedules take two calls at least
    assert all(_row(app_id, i).due_slot == -300_000_000 + 10 * 3_600_000 for i in ids)


def test_a_tick_that_stops_early_moves_the_mark_only_as_far_as_it_got(index_time: IndexTime) -> None:
    """The walk meets the wheel slots in order, so a tick whose time runs out says how far it got;
    the next tick goes on from there (a minute earlier) instead of reading the whole window again."""
    clock.set_clock(clock.FixedClock(T0))
    _, key = new_app("slots-stop")
    ids = [_create(key, cron=f"{second} 0 10 * * *") for second in (0, 20, 40)]
    due_walk_left_at(clock.to_ms(T0 + timedelta(seconds=70)))  # a tick at 09:00 got to 09:01:10
    index_time.settle()
    fire = T0.replace(hour=10)
    clock.set_clock(clock.FixedClock(fire))
    work = due_walk.schedule_work(fire, due_walk.ScheduleScanReport())
    next(work)  # the 10:00:00 schedule: dispatched, then the tick's time runs out
    work.close()
    assert fire in _fires(ids[0]) and not _fires(ids[1]) and not _fires(ids[2])
    mark = schedule_data.due_mark().mark
    assert mark == clock.to_ms(fire + timedelta(seconds=20)) - 1 - due_walk.STOP_MARGIN_MS
    _scan_at(fire + timedelta(seconds=30), index_time)
    assert fire + timedelta(seconds=20) in _fires(ids[1]) and fire + timedelta(seconds=40) in _fires(ids[2])


def test_a_schedule_that_failed_is_caught_up_from_its_exact_time_once_it_recovers(
    index_time: IndexTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It owes its fire at the exact time, which every tick reads, so the mark moves on without it.
    The first tick after it recovers catches it up and puts it back on its wheel."""
    clock.set_clock(clock.FixedClock(T0))
    app_id, key = new_app("slots-edit")
    schedule_id = _create(key, cron="0 10 * * *")
    _scan_at(T0, index_time)
    fire = T0.replace(hour=10)
    real = dispatch.dispatch_fire

    def broken(schedule: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the schedule's dispatch failed")

    monkeypatch.setattr(dispatch, "dispatch_fire", broken)
    _scan_at(fire, index_time)
    _scan_at(fire + timedelta(minutes=30), index_time)
    assert schedule_data.due_mark().mark == clock.to_ms(fire + timedelta(minutes=30)) + 70_000
    assert _row(app_id, schedule_id).next_fire_at == clock.to_ms(fire)  # still owed
    monkeypatch.setattr(dispatch, "dispatch_fire", real)
    _scan_at(fire + timedelta(minutes=31), index_time)
    assert fire in _fires(schedule_id)  # caught up: RUN_ONCE runs the missed fire late
    assert _row(app_id, schedule_id).due_slot == -300_000_000 + 10 * 3_600_000


def _fired_once(daily: tuple[str, str], index_time: IndexTime) -> tuple[str, str, datetime]:
    """The `daily` schedule after the tick at its 10:00 fire, which the walk, not a write, moved past.
    (App id, schedule id, that fire time)"""
    app_id, schedule_id = daily
    fire = T0.replace(hour=10)
    _scan_at(fire, index_time)
    return app_id, schedule_id, fire


def test_an_edit_of_a_schedule_the_walk_moved_stores_its_next_fire_and_fires_nothing_again(
    daily: tuple[str, str], index_time: IndexTime
) -> None:
    app_id, schedule_id, fire = _fired_once(daily, index_time)
    clock.set_clock(clock.FixedClock(fire + timedelta(hours=2)))
    resp = call_api("PATCH", f"/v1/schedules/{schedule_id}", key=_key_of(app_id), body={"name": "renamed"})
    assert resp.status == 200, resp.body
    assert resp.body["next_fire_time"].startswith("2026-12-03T10:00:00")
    assert _row(app_id, schedule_id).next_fire_at == clock.to_ms(fire + timedelta(days=1))
    _scan_at(fire + timedelta(hours=2, minutes=1), index_time)
    assert list(_fires(schedule_id)) == [fire]  # nothing caught up or fired twice
    _scan_at(fire + timedelta(days=1), index_time)
    assert sorted(_fires(schedule_id)) == [fire, fire + timedelta(days=1)]


def test_a_pause_and_resume_of_a_schedule_the_walk_moved_go_on_from_the_next_fire(
    daily: tuple[str, str], index_time: IndexTime
) -> None:
    app_id, schedule_id, fire = _fired_once(daily, index_time)
    key = _key_of(app_id)
    clock.set_clock(clock.FixedClock(fire + timedelta(hours=1)))
    assert call_api("POST", f"/v1/schedules/{schedule_id}/pause", key=key).status == 200
    resumed = call_api("POST", f"/v1/schedules/{schedule_id}/resume", key=key)
    assert resumed.status == 200 and resumed.body["next_fire_time"].startswith("2026-12-03T10:00:00")
    assert resumed.body["last_fire_time"] is None  # the 10:00 run never went out: the pause cancelled it
    _scan_at(fire + timedelta(days=1), index_time)
    assert sorted(_fires(schedule_id)) == [fire, fire + timedelta(days=1)]


@pytest.mark.parametrize("steps", [1, 20])
def test_a_tick_that_stops_early_leaves_the_mark_before_the_next_fire_of_an_every_tick_schedule(
    index_time: IndexTime, monkeypatch: pytest.MonkeyPatch, steps: int
) -> None:
    """An every-second schedule is not written at its fires either: the next tick goes on from where
    this one stopped, with no fire skipped, although a later wheel slot was already in sight. After
    one step it has just left the exact key of its create for the every-tick one."""
    monkeypatch.setattr(due_walk, "STOP_MARGIN_MS", 0)
    clock.set_clock(clock.FixedClock(T0 - timedelta(minutes=10)))
    app_id, key = new_app("slots-tick-stop")
    daily = _create(key, cron="0 1 9 * * *")  # 09:01:00, on the day wheel
    clock.set_clock(clock.FixedClock(T0))
    every_second = _create(key, cron="* * * * * *")  # the create dispatches its first seconds
    # its next fire is within the look-ahead of the create: the exact key, until the walk advances it
    assert due_slots.is_exact(int(_row(app_id, every_second).due_slot))
    due_walk_left_at(clock.to_ms(T0))
    index_time.settle()
    now = T0 + timedelta(seconds=5)
    clock.set_clock(clock.FixedClock(now))
    work = due_walk.schedule_work(now, due_walk.ScheduleScanReport())
    for _ in range(steps):
        next(work)
    work.close()
    last = max(_fires(every_second))
    assert last < T0 + timedelta(seconds=40) and not _fires(daily)
    assert schedule_data.due_mark().mark == clock.to_ms(last + timedelta(seconds=1)) - 1
    _scan_at(now + timedelta(seconds=5), index_time)
    fired = sorted(_fires(every_second))
    assert fired == [T0 + timedelta(seconds=s) for s in range(1, len(fired) + 1)]  # none skipped
    assert fired[-1] == now + timedelta(seconds=5) + timedelta(milliseconds=get_settings().lookahead_ms)
    assert T0 + timedelta(minutes=1) in _fires(daily)
    assert _row(app_id, every_second).due_slot == due_slots.TICK_SLOT


@pytest.fixture
def walk_advances_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The stack deployed with DueWalkAdvances=false (before a rollback)."""
    monkeypatch.setenv("DUE_WALK_ADVANCES", "false")
    get_settings.cache_clear()
    yield
    monkeypatch.delenv("DUE_WALK_ADVANCES")
    get_settings.cache_clear()


def test_before_a_rollback_the_scan_stores_each_walked_next_fire_and_writes_every_advance(
    daily: tuple[str, str], index_time: IndexTime, request: pytest.FixtureRequest
) -> None:
    """A release that reads only the stored next fire time would take a lagging one as missed fires."""
    app_id, schedule_id = daily
    fire = T0.replace(hour=10)
    _scan_at(fire, index_time)
    assert _row(app_id, schedule_id).next_fire_at == clock.to_ms(fire)  # the walk advanced it
    request.getfixturevalue("walk_advances_off")
    _scan_at(fire + timedelta(hours=1), index_time)
    row = _row(app_id, schedule_id)
    assert (row.next_fire_at, row.last_fire_at) == (clock.to_ms(fire + timedelta(days=1)), clock.to_ms(fire))
    assert schedule_data.due_mark().timing_stored
    _scan_at(fire + timedelta(days=1), index_time)  # its next fire: the advance is written
    assert _row(app_id, schedule_id).next_fire_at == clock.to_ms(fire + timedelta(days=2))
    assert sorted(_fires(schedule_id)) == [fire, fire + timedelta(days=1)]


def test_with_the_walks_advances_back_on_the_record_of_stored_timing_is_dropped(
    daily: tuple[str, str], index_time: IndexTime, walk_advances_off: None
) -> None:
    _scan_at(T0.replace(hour=10), index_time)
    assert schedule_data.due_mark().timing_stored
    os.environ.pop("DUE_WALK_ADVANCES")
    get_settings.cache_clear()
    _scan_at(T0.replace(hour=11), index_time)
    assert not schedule_data.due_mark().timing_stored
    os.environ["DUE_WALK_ADVANCES"] = "false"  # for the fixture to remove


def test_a_wheel_schedule_stored_in_a_form_this_release_cannot_read_fails_alone(
    daily: tuple[str, str], index_time: IndexTime
) -> None:
    """Its expression no longer parses: the walk cannot tell how far it got, and the schedule beside
    it on the same slot still fires. It owes its fire at the exact time, like any failed one."""
    app_id, broken_id = daily
    good_id = _create(_key_of(app_id), cron="0 10 * * *")
    first = T0.replace(hour=10)
    _scan_at(first, index_time)  # both fire; the walk, not a write, moves them on
    _row(app_id, broken_id).update(actions=[ScheduleModel.cron.set("x")])
    fire = first + timedelta(days=1)
    report = _scan_at(fire, index_time)
    assert report["item_failures"] == 1
    assert fire in _fires(good_id) and fire not in _fires(broken_id)
    assert _row(app_id, broken_id).due_slot == clock.to_ms(first)  # what it stored: every tick reads it
