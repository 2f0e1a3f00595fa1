"""How a Schedule is stored: it reads back as it was written, and the data layer alone decides,
from its status and next fire time, whether its item sits in the scan's due index."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

from edgecron import ids
from edgecron.data import schedules as schedule_data
from edgecron.data.models import ScheduleModel
from edgecron.domain.schedules import Schedule
from edgecron.domain.vocabulary import MissedPolicy, OverlapPolicy, ScheduleStatus
from tests.integration.conftest import new_app

FIRE_AT = 1_780_000_000_000


def schedule(app_id: str, **changes: object) -> Schedule:
    base = Schedule(
        app_id=app_id,
        schedule_id=ids.new_id("sch", FIRE_AT),
        created_at=1,
        updated_at=2,
        cron="0 * * * *",
        endpoint_ids=("ep_1",),
        next_fire_at=FIRE_AT,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def stored(s: Schedule) -> tuple[Schedule | None, ScheduleModel]:
    return (
        schedule_data.get_timed(s.app_id, s.schedule_id, consistent=True),
        ScheduleModel.get(s.app_id, s.schedule_id, consistent_read=True),
    )


@pytest.mark.parametrize(
    ("status", "next_fire_at", "in_index"),
    [
        (ScheduleStatus.ACTIVE, FIRE_AT, True),
        (ScheduleStatus.ACTIVE, None, False),  # nothing left to fire
        (ScheduleStatus.PAUSED, FIRE_AT, False),
        (ScheduleStatus.ENDED, None, False),
    ],
)
def test_the_stored_item_is_in_the_due_index_exactly_when_active_with_a_next_fire_time(
    status: ScheduleStatus, next_fire_at: int | None, in_index: bool
) -> None:
    app_id, _ = new_app("schedule-rows-due")
    written = schedule(app_id, status=status, next_fire_at=next_fire_at)
    schedule_data.put_new(written)
    _, row = stored(written)
    assert row.due_shard == (schedule_data.shard_for(written.schedule_id) if in_index else None)
    paused = dataclasses.replace(written, status=ScheduleStatus.PAUSED, version=written.version + 1)
    assert schedule_data.save_if_version(paused, written.version)
    assert stored(paused)[1].due_shard is None  # a whole write takes it out of the index


def test_a_schedule_reads_back_as_it_was_written() -> None:
    app_id, _ = new_app("schedule-rows-read")
    full = schedule(
        app_id,
        name="nightly",
        timezone="Europe/Berlin",
        payload={"a": [1, 2]},
        missed_policy=MissedPolicy.SKIP,
        retry_policy_id="rp_1",
        consecutive_failures=2,
        start_at=FIRE_AT - 10,
        end_at=FIRE_AT + 10,
        jitter_sec=5,
        overlap_policy=OverlapPolicy.BUFFER_ONE,
        turn_at=FIRE_AT - 3_600_000,
        next_turn_at=FIRE_AT,
        missed_left_out=4,
        last_fire_at=FIRE_AT - 3_600_000,
        version=7,
    )
    one_time = schedule(app_id, cron=None, at=FIRE_AT, endpoint_ids=(), finished=True, next_fire_at=None)
    for written in (full, one_time):
        schedule_data.put_new(written)
        read = stored(written)[0]
        # the slot and the stored timing the compare-and-set checks are the data layer's own
        assert read == written and written.as_stored is None and read.as_stored is not None
        assert replace(read, as_stored=None) == written
    assert schedule_data.walk_moves(stored(full)[0]) and not schedule_data.walk_moves(stored(one_time)[0])


def test_an_allow_overlap_policy_is_stored_as_nothing() -> None:
    app_id, _ = new_app("schedule-rows-overlap")
    written = schedule(app_id)
    schedule_data.put_new(written)
    read, row = stored(written)
    assert row.overlap_policy is None and read is not None and read.overlap_policy is None
