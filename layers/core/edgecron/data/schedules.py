"""Schedules. Only ACTIVE schedules with a next fire time carry `due_shard`, so the sparse `due`
index holds exactly what the scan may have to dispatch; every move of `next_fire_at` is a CAS."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data.conditional import save_if, update_if
from edgecron.data.keys import at_version
from edgecron.data.models import ScheduleModel
from edgecron.data.paging import Page, query_page
from edgecron.domain.vocabulary import ScheduleStatus

M = ScheduleModel


def shard_for(schedule_id: str) -> str:
    return ids.shard_of(schedule_id, get_settings().shards)


def get(app_id: str, schedule_id: str, *, consistent: bool = False) -> ScheduleModel | None:
    try:
        return M.get(app_id, schedule_id, consistent_read=consistent)
    except DoesNotExist:
        return None


def reload(schedule: ScheduleModel) -> bool:
    """Read the schedule again in place (strongly consistent); False if it was deleted."""
    try:
        schedule.refresh(consistent_read=True)
    except DoesNotExist:
        return False
    return True


def _sync_due(schedule: ScheduleModel) -> None:
    """The `due` index holds exactly the ACTIVE schedules with a next fire time: set or clear the
    shard that puts a schedule in it from its status and timing, on every whole-item write."""
    active = schedule.status == ScheduleStatus.ACTIVE and schedule.next_fire_at is not None
    schedule.due_shard = shard_for(schedule.schedule_id) if active else None


def put_new(schedule: ScheduleModel) -> None:
    _sync_due(schedule)
    schedule.save(condition=M.schedule_id.does_not_exist())


def save_if_version(schedule: ScheduleModel, version: int) -> bool:
    """Write the whole item if nobody changed it since `version` was read (user edits, pause).
    Sound only because every other write of a schedule moves `version` too."""
    _sync_due(schedule)
    return save_if(schedule, at_version(M, version))


def delete(schedule: ScheduleModel) -> None:
    schedule.delete()


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[ScheduleModel]:
    return query_page(M, app_id, limit, cursor, newest_first=True)


def due(shard: str, until_ms: int) -> Iterator[ScheduleModel]:
    yield from M.due.query(shard, range_key_condition=M.next_fire_at <= until_ms)


def advance(
    schedule: ScheduleModel,
    expected_ms: int,
    next_ms: int | None,
    now_ms: int,
    *,
    extra: list[Any] | None = None,
) -> bool:
    """CAS `next_fire_at` from the fire just dispatched to the next one; a concurrent scan, catch-up
    or user edit that moved it first wins and this call changes nothing."""
    actions: list[Any] = [
        M.updated_at.set(now_ms),
        M.last_fire_at.set(expected_ms),
        M.version.add(1),
        *(extra or []),
    ]
    if next_ms is None:
        actions += [M.next_fire_at.remove(), M.due_shard.remove(), *_end_if_windowed(schedule)]
    else:
        actions += [M.next_fire_at.set(next_ms)]
    return update_if(schedule, actions, (M.next_fire_at == expected_ms) & (M.status == ScheduleStatus.ACTIVE))


def _end_if_windowed(schedule: ScheduleModel) -> list[Any]:
    """A cron schedule with an end_at that has no fire time left is ENDED (a PATCH with a later
    end_at makes it ACTIVE again)."""
    if schedule.cron is not None and schedule.end_at is not None:
        return [M.status.set(ScheduleStatus.ENDED)]
    return []


def record_outcome(
    app_id: str,
    schedule_id: str,
    failed: bool,
    pause_after: int,
    now_ms: int,
    pause_reason: Callable[[int], str] | None = None,
) -> tuple[int, bool]:
    """Count a settled fire: success resets, failure adds one and pauses at `pause_after`, storing
    `pause_reason(failures)` as the schedule's pause reason.
    Returns (consecutive_failures, paused_now). Atomic conditional updates, no read-modify-write."""
    schedule = M(app_id=app_id, schedule_id=schedule_id)
    if not failed:
        update_if(schedule, [M.consecutive_failures.set(0), M.version.add(1)], M.schedule_id.exists())
        return 0, False
    counted = update_if(
        schedule,
        [M.consecutive_failures.add(1), M.version.add(1), M.updated_at.set(now_ms)],
        M.schedule_id.exists() & (M.status == ScheduleStatus.ACTIVE),
    )
    if not counted:
        return 0, False
    failures = int(schedule.consecutive_failures)
    if failures < pause_after:
        return failures, False
    paused = update_if(
        schedule,
        [
            M.status.set(ScheduleStatus.PAUSED),
            M.due_shard.remove(),
            M.version.add(1),
            M.updated_at.set(now_ms),
            *([M.pause_reason.set(pause_reason(failures))] if pause_reason is not None else []),
        ],
        (M.status == ScheduleStatus.ACTIVE) & (M.consecutive_failures >= pause_after),
    )
    return failures, paused


def finish_one_time(app_id: str, schedule_id: str, now_ms: int) -> None:
    update_if(
        M(app_id=app_id, schedule_id=schedule_id),
        [M.finished.set(True), M.version.add(1), M.updated_at.set(now_ms)],
        M.schedule_id.exists() & M.next_fire_at.does_not_exist(),
    )


def catch_up_move(
    schedule: ScheduleModel,
    expected_ms: int,
    next_ms: int | None,
    left_out: int,
    now_ms: int,
    *,
    finish: bool = False,
) -> bool:
    """CAS after a catch-up: move `next_fire_at` past the missed fire times and count the MISSED
    rows left out by the cap. Fails when a scan, another catch-up or a user edit moved it first."""
    actions: list[Any] = [M.updated_at.set(now_ms), M.version.add(1), M.missed_left_out.add(left_out)]
    if next_ms is None:
        actions += [M.next_fire_at.remove(), M.due_shard.remove(), *_end_if_windowed(schedule)]
    else:
        actions.append(M.next_fire_at.set(next_ms))
    if finish:
        actions.append(M.finished.set(True))
    return update_if(schedule, actions, (M.next_fire_at == expected_ms) & (M.status == ScheduleStatus.ACTIVE))


def all_due(until_ms: int, *, first_shard: int = 0) -> Iterator[ScheduleModel]:
    """Every due schedule, shard by shard from `first_shard` (the scan rotates it so no shard's
    schedules always come last)."""
    shards = get_settings().shards
    for i in range(shards):
        yield from due(str((first_shard + i) % shards), until_ms)
