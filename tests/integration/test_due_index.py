"""The scan's walk of due schedules over the keys-only `due_slots` index: schedules are fetched by key,
and an entry the index still shows after its schedule moved on or was paused is left out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from edgecron import clock
from edgecron.data import schedules as schedule_data
from edgecron.data.models import ScheduleModel
from edgecron.domain.due_slots import DAY_MS
from edgecron.domain.schedules import Schedule
from edgecron.domain.vocabulary import ScheduleStatus
from edgecron_testing.aws_fidelity import IndexTime
from edgecron_testing.harness import call_api, new_endpoint, new_schedule
from tests.integration.conftest import new_app

T0 = datetime(2026, 12, 2, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
def fixed() -> clock.FixedClock:
    c = clock.FixedClock(T0)
    clock.set_clock(c)
    return c


def _a_schedule(name: str) -> tuple[Schedule, str]:
    """An hourly schedule (its first fire, 10:00, is past the look-ahead of a create at 09:00), and
    its App's API key."""
    app_id, key = new_app(name)
    endpoint_id = new_endpoint(key, "http://127.0.0.1:9/due")
    schedule_id = new_schedule(key, cron="0 * * * *", endpoint_ids=[endpoint_id])["id"]
    schedule = schedule_data.get_timed(app_id, schedule_id, consistent=True)
    row = ScheduleModel.get(app_id, schedule_id, consistent_read=True)
    assert schedule is not None and row.due_shard == schedule_data.shard_for(schedule_id)  # in the index
    assert schedule.next_fire_at == clock.to_ms(T0 + timedelta(hours=1))
    return schedule, key


def _due(shard: str, until_ms: int) -> list[Schedule]:
    """The walk of a tick whose window covers every slot (the first after a start)."""
    return [found.schedule for found in schedule_data.due(shard, until_ms - DAY_MS, until_ms)]


def _due_ids(schedule: Schedule, until_ms: int) -> list[str]:
    return [s.schedule_id for s in _due(schedule_data.shard_for(schedule.schedule_id), until_ms)]


def test_the_walk_fetches_each_due_schedule_whole_in_fire_time_order(
    fixed: clock.FixedClock, index_time: IndexTime
) -> None:
    (first, _), (second, _) = _a_schedule("due-a"), _a_schedule("due-b")
    index_time.settle()
    fire_ms = int(first.next_fire_at)
    assert second.next_fire_at == fire_ms
    by_shard: dict[str, list[str]] = {}
    for schedule in (first, second):
        by_shard.setdefault(schedule_data.shard_for(schedule.schedule_id), []).append(schedule.schedule_id)
    for shard, expected in by_shard.items():
        found = _due(shard, fire_ms)
        assert {s.schedule_id for s in found} >= set(expected)
        assert [s.next_fire_at for s in found] == sorted(s.next_fire_at for s in found)
        # read from the table, not the index: every attribute is there
        assert all(s.cron and s.endpoint_ids and s.status == ScheduleStatus.ACTIVE for s in found)
    assert _due_ids(first, fire_ms - 1) == []  # not due yet


@pytest.mark.index_lag(5_000)
def test_an_entry_the_index_still_shows_after_its_schedule_moved_on_or_paused_is_left_out(
    fixed: clock.FixedClock, index_time: IndexTime
) -> None:
    (moved, _), (paused, key) = _a_schedule("due-moved"), _a_schedule("due-paused")
    index_time.settle()
    fire_ms = int(moved.next_fire_at)
    assert moved.schedule_id in _due_ids(moved, fire_ms) and paused.schedule_id in _due_ids(paused, fire_ms)
    assert schedule_data.advance(moved, fire_ms, fire_ms + 3_600_000, clock.to_ms(fixed.now()))
    resp = call_api("POST", f"/v1/schedules/{paused.schedule_id}/pause", key=key)
    assert resp.status == 200, resp.body
    with index_time.unlagged():
        assert moved.schedule_id not in _due_ids(moved, fire_ms)  # up to date: the entry moved
    # lagged: the index still shows both entries as due, the items say otherwise
    assert moved.schedule_id not in _due_ids(moved, fire_ms)
    assert paused.schedule_id not in _due_ids(paused, fire_ms)
    assert moved.schedule_id in _due_ids(moved, fire_ms + 3_600_000)
