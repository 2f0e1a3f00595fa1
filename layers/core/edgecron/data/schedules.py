"""Schedules. Reads return `Schedule` entities and writes take them; a conditional write returns
the Schedule as stored, or None when its condition failed. Only ACTIVE schedules with a next fire
time carry `due_shard`, so the sparse `due` index holds exactly what the scan may have to dispatch;
the shard is this module's alone, and every move of `next_fire_at` is a CAS."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data.conditional import save_if, update_if
from edgecron.data.keys import at_version, items_of_entries
from edgecron.data.models import ScheduleModel
from edgecron.data.paging import Page, query_page
from edgecron.domain.schedules import Schedule
from edgecron.domain.vocabulary import MissedPolicy, OverlapPolicy, ScheduleStatus

M = ScheduleModel


def shard_for(schedule_id: str) -> str:
    return ids.shard_of(schedule_id, get_settings().shards)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def to_entity(row: ScheduleModel) -> Schedule:
    return Schedule(
        app_id=row.app_id,
        schedule_id=row.schedule_id,
        created_at=int(row.created_at),
        updated_at=int(row.updated_at),
        name=row.name,
        cron=row.cron,
        at=_opt_int(row.at),
        timezone=row.timezone or "UTC",
        endpoint_ids=tuple(row.endpoint_ids or ()),
        payload=row.payload,
        status=ScheduleStatus(row.status),
        missed_policy=MissedPolicy(row.missed_policy or MissedPolicy.RUN_ONCE),
        retry_policy_id=row.retry_policy_id,
        consecutive_failures=int(row.consecutive_failures or 0),
        pause_reason=row.pause_reason,
        start_at=_opt_int(row.start_at),
        end_at=_opt_int(row.end_at),
        jitter_sec=_opt_int(row.jitter_sec),
        overlap_policy=OverlapPolicy(row.overlap_policy) if row.overlap_policy else None,
        overlap_running_at=_opt_int(row.overlap_running_at),
        overlap_buffered_at=_opt_int(row.overlap_buffered_at),
        next_fire_at=_opt_int(row.next_fire_at),
        finished=bool(row.finished),
        missed_left_out=int(row.missed_left_out or 0),
        last_fire_at=_opt_int(row.last_fire_at),
        version=int(row.version or 0),
    )


def _row(schedule: Schedule) -> ScheduleModel:
    """The whole item of a Schedule, with the `due_shard` its status and timing call for: the `due`
    index holds exactly the ACTIVE schedules with a next fire time."""
    active = schedule.status == ScheduleStatus.ACTIVE and schedule.next_fire_at is not None
    return M(
        app_id=schedule.app_id,
        schedule_id=schedule.schedule_id,
        name=schedule.name,
        cron=schedule.cron,
        at=schedule.at,
        timezone=schedule.timezone,
        endpoint_ids=list(schedule.endpoint_ids),
        payload=schedule.payload,
        status=str(schedule.status),
        missed_policy=str(schedule.missed_policy),
        retry_policy_id=schedule.retry_policy_id,
        consecutive_failures=schedule.consecutive_failures,
        pause_reason=schedule.pause_reason,
        start_at=schedule.start_at,
        end_at=schedule.end_at,
        jitter_sec=schedule.jitter_sec,
        overlap_policy=None if schedule.overlap_policy is None else str(schedule.overlap_policy),
        overlap_running_at=schedule.overlap_running_at,
        overlap_buffered_at=schedule.overlap_buffered_at,
        next_fire_at=schedule.next_fire_at,
        due_shard=shard_for(schedule.schedule_id) if active else None,
        finished=schedule.finished,
        missed_left_out=schedule.missed_left_out,
        last_fire_at=schedule.last_fire_at,
        version=schedule.version,
        created_at=schedule.created_at,
        updated_at=schedule.updated_at,
    )


def _key(schedule: Schedule) -> ScheduleModel:
    return M(app_id=schedule.app_id, schedule_id=schedule.schedule_id)


def _update(schedule: Schedule, actions: list[Any], condition: Any) -> Schedule | None:
    """A conditional update: the Schedule as stored after it, or None when the condition failed."""
    item = _key(schedule)
    return to_entity(item) if update_if(item, actions, condition) else None


def get(app_id: str, schedule_id: str, *, consistent: bool = False) -> Schedule | None:
    try:
        return to_entity(M.get(app_id, schedule_id, consistent_read=consistent))
    except DoesNotExist:
        return None


def reload(schedule: Schedule) -> Schedule | None:
    """The schedule read again, strongly consistent; None if it was deleted."""
    return get(schedule.app_id, schedule.schedule_id, consistent=True)


def put_new(schedule: Schedule) -> None:
    _row(schedule).save(condition=M.schedule_id.does_not_exist())


def save_if_version(schedule: Schedule, version: int) -> bool:
    """Write the whole item if nobody changed it since `version` was read (user edits, pause).
    Sound only because every other write of a schedule moves `version` too."""
    return save_if(_row(schedule), at_version(M, version))


def delete(schedule: Schedule) -> None:
    _key(schedule).delete()


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[Schedule]:
    page = query_page(M, app_id, limit, cursor, newest_first=True)
    return Page([to_entity(row) for row in page.items], page.last_key)


def due(shard: str, until_ms: int) -> Iterator[Schedule]:
    """The schedules of `shard` due by `until_ms`, in fire-time order (see `_due_rows`)."""
    for row in _due_rows(shard, until_ms):
        yield to_entity(row)


def _due_rows(shard: str, until_ms: int) -> Iterator[ScheduleModel]:
    """The schedules of `shard` due by `until_ms`, in fire-time order. The `due_keys` index holds keys
    only, so the schedules are read with consistent batch gets; an entry whose schedule is gone, left
    the index or moved past `until_ms` since (the index lags the table) is left out."""
    entries = M.due.query(shard, range_key_condition=M.next_fire_at <= until_ms)
    yield from items_of_entries(
        M,
        ((entry.app_id, entry.schedule_id) for entry in entries),
        lambda s: (s.app_id, s.schedule_id),
        lambda s: s.due_shard is not None and s.next_fire_at is not None and s.next_fire_at <= until_ms,
    )


def advance(
    schedule: Schedule,
    expected_ms: int,
    next_ms: int | None,
    now_ms: int,
    *,
    extra: list[Any] | None = None,
) -> Schedule | None:
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
    return _update(schedule, actions, (M.next_fire_at == expected_ms) & (M.status == ScheduleStatus.ACTIVE))


def _end_if_windowed(schedule: Schedule) -> list[Any]:
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


def take_slot(schedule: Schedule, fire_at_ms: int, seen_running: int | None) -> bool:
    """The fire at `fire_at_ms` starts under the overlap policy: it holds the slot from now on (in
    place of `seen_running`, the holder read, which settled), and is no longer the buffered one.
    Fails when another writer moved the slot since it was read."""
    seen = (
        M.overlap_running_at.does_not_exist()
        if seen_running is None
        else M.overlap_running_at == seen_running
    )
    actions: list[Any] = [M.overlap_running_at.set(fire_at_ms), M.version.add(1)]
    if schedule.overlap_buffered_at == fire_at_ms:
        actions.append(M.overlap_buffered_at.remove())
    return update_if(
        _key(schedule), actions, M.schedule_id.exists() & (seen | (M.overlap_running_at == fire_at_ms))
    )


def buffer_slot(schedule: Schedule, fire_at_ms: int, seen_buffered: int | None) -> bool:
    """The fire at `fire_at_ms` is the one waiting behind the running Fire (in place of
    `seen_buffered`, one read that no longer waits); fails when another took the place first."""
    seen = (
        M.overlap_buffered_at.does_not_exist()
        if seen_buffered is None
        else M.overlap_buffered_at == seen_buffered
    )
    return update_if(
        _key(schedule),
        [M.overlap_buffered_at.set(fire_at_ms), M.version.add(1)],
        M.schedule_id.exists() & (seen | (M.overlap_buffered_at == fire_at_ms)),
    )


def release_slot(
    schedule: Schedule, fire_at_ms: int, start_ms: int | None, seen_buffered: int | None
) -> bool:
    """The Fire holding the slot settled: hand it to the buffered fire `start_ms` (None: free it,
    and drop a buffered entry that no longer waits). Fails when the slot moved since it was read."""
    buffered = (
        M.overlap_buffered_at.does_not_exist()
        if seen_buffered is None
        else M.overlap_buffered_at == seen_buffered
    )
    running: list[Any] = (
        [M.overlap_running_at.remove()] if start_ms is None else [M.overlap_running_at.set(start_ms)]
    )
    return update_if(
        _key(schedule),
        [*running, M.overlap_buffered_at.remove(), M.version.add(1)],
        (M.overlap_running_at == fire_at_ms) & buffered,
    )


def finish_one_time(app_id: str, schedule_id: str, now_ms: int) -> None:
    update_if(
        M(app_id=app_id, schedule_id=schedule_id),
        [M.finished.set(True), M.version.add(1), M.updated_at.set(now_ms)],
        M.schedule_id.exists() & M.next_fire_at.does_not_exist(),
    )


def catch_up_move(
    schedule: Schedule,
    expected_ms: int,
    next_ms: int | None,
    left_out: int,
    now_ms: int,
    *,
    finish: bool = False,
) -> Schedule | None:
    """CAS after a catch-up: move `next_fire_at` past the missed fire times and count the MISSED
    rows left out by the cap. Fails when a scan, another catch-up or a user edit moved it first."""
    actions: list[Any] = [M.updated_at.set(now_ms), M.version.add(1), M.missed_left_out.add(left_out)]
    if next_ms is None:
        actions += [M.next_fire_at.remove(), M.due_shard.remove(), *_end_if_windowed(schedule)]
    else:
        actions.append(M.next_fire_at.set(next_ms))
    if finish:
        actions.append(M.finished.set(True))
    return _update(schedule, actions, (M.next_fire_at == expected_ms) & (M.status == ScheduleStatus.ACTIVE))
