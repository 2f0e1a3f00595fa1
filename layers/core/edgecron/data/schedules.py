"""Schedules. Only ACTIVE schedules with a next fire time carry `due_shard`, so the sparse `due`
index holds exactly what the scan may have to dispatch; every move of `next_fire_at` is a CAS."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist, PutError, UpdateError

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data.models import ScheduleModel
from edgecron.data.paging import Page, query_page

M = ScheduleModel


def _cond_failed(exc: UpdateError | PutError) -> bool:
    return exc.cause_response_code == "ConditionalCheckFailedException"


def shard_for(schedule_id: str) -> str:
    return ids.shard_of(schedule_id, get_settings().shards)


def get(app_id: str, schedule_id: str, *, consistent: bool = False) -> ScheduleModel | None:
    try:
        return M.get(app_id, schedule_id, consistent_read=consistent)
    except DoesNotExist:
        return None


def put_new(schedule: ScheduleModel) -> None:
    schedule.save(condition=M.schedule_id.does_not_exist())


def save_if_version(schedule: ScheduleModel, version: int) -> bool:
    """Write the whole item if nobody changed it since `version` was read (user edits, pause)."""
    try:
        schedule.save(condition=M.version == version)
        return True
    except PutError as exc:
        if _cond_failed(exc):
            return False
        raise


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
        actions += [M.next_fire_at.remove(), M.due_shard.remove()]
    else:
        actions += [M.next_fire_at.set(next_ms)]
    try:
        schedule.update(actions=actions, condition=(M.next_fire_at == expected_ms) & (M.status == "ACTIVE"))
        return True
    except UpdateError as exc:
        if _cond_failed(exc):
            return False
        raise


def record_outcome(
    app_id: str, schedule_id: str, failed: bool, pause_after: int, now_ms: int
) -> tuple[int, bool]:
    """Count a settled fire: success resets, failure adds one and pauses at `pause_after`.
    Returns (consecutive_failures, paused_now). Atomic conditional updates, no read-modify-write."""
    schedule = M(app_id=app_id, schedule_id=schedule_id)
    try:
        if not failed:
            schedule.update(actions=[M.consecutive_failures.set(0)], condition=M.schedule_id.exists())
            return 0, False
        schedule.update(
            actions=[M.consecutive_failures.add(1), M.updated_at.set(now_ms)],
            condition=M.schedule_id.exists() & (M.status == "ACTIVE"),
        )
    except UpdateError as exc:
        if _cond_failed(exc):
            return 0, False
        raise
    failures = int(schedule.consecutive_failures)
    if failures < pause_after:
        return failures, False
    try:
        schedule.update(
            actions=[
                M.status.set("PAUSED"),
                M.due_shard.remove(),
                M.version.add(1),
                M.updated_at.set(now_ms),
            ],
            condition=(M.status == "ACTIVE") & (M.consecutive_failures >= pause_after),
        )
    except UpdateError as exc:
        if _cond_failed(exc):
            return failures, False
        raise
    return failures, True


def finish_one_time(app_id: str, schedule_id: str, now_ms: int) -> None:
    try:
        M(app_id=app_id, schedule_id=schedule_id).update(
            actions=[M.finished.set(True), M.updated_at.set(now_ms)],
            condition=M.schedule_id.exists() & M.next_fire_at.does_not_exist(),
        )
    except UpdateError as exc:
        if not _cond_failed(exc):
            raise


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
        actions += [M.next_fire_at.remove(), M.due_shard.remove()]
    else:
        actions.append(M.next_fire_at.set(next_ms))
    if finish:
        actions.append(M.finished.set(True))
    try:
        schedule.update(actions=actions, condition=(M.next_fire_at == expected_ms) & (M.status == "ACTIVE"))
        return True
    except UpdateError as exc:
        if _cond_failed(exc):
            return False
        raise


def all_due(until_ms: int) -> Iterator[ScheduleModel]:
    for shard in range(get_settings().shards):
        yield from due(str(shard), until_ms)
