"""Fires: one row per (schedule_id, fire_at), created with a conditional write — the exactly-once
anchor. `open_shard` keeps a Fire in the sparse `open_fires` index until it settles; `started_at`
is set once its runs are enqueued, so a Fire open without it was interrupted mid-dispatch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data.conditional import save_if, update_if
from edgecron.data.expiry import expires_at_s
from edgecron.data.models import FireModel
from edgecron.data.paging import Page, query_page

M = FireModel
SCHEDULED, RUNNING, COMPLETED, FAILED, CANCELLED, MISSED = (
    "SCHEDULED",
    "RUNNING",
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "MISSED",
)
OPEN = (SCHEDULED, RUNNING)
FINAL = (COMPLETED, FAILED, CANCELLED, MISSED)


def open_shard(schedule_id: str) -> str:
    return ids.shard_of(schedule_id, get_settings().shards)


def create(
    schedule_id: str,
    fire_at_ms: int,
    app_id: str,
    endpoint_ids: list[str],
    run_ids: list[str],
    now_ms: int,
    *,
    status: str = SCHEDULED,
    error: str | None = None,
) -> tuple[FireModel, bool]:
    """Create the Fire unless it exists; returns (the stored Fire, created?)."""
    is_open = status in OPEN
    fire = M(
        schedule_id=schedule_id,
        fire_at=fire_at_ms,
        app_id=app_id,
        status=status,
        endpoint_ids=endpoint_ids,
        run_ids=run_ids,
        created_at=now_ms,
        error=error,
        open_shard=open_shard(schedule_id) if is_open else None,
        finished_at=None if is_open else now_ms,
        expires_at=expires_at_s(now_ms),
    )
    if save_if(fire, M.fire_at.does_not_exist()):
        return fire, True
    existing = get(schedule_id, fire_at_ms)
    if existing is None:  # expired and deleted between the two calls: treat as new
        return create(
            schedule_id, fire_at_ms, app_id, endpoint_ids, run_ids, now_ms, status=status, error=error
        )
    return existing, False


def get(schedule_id: str, fire_at_ms: int) -> FireModel | None:
    try:
        return M.get(schedule_id, fire_at_ms, consistent_read=True)
    except DoesNotExist:
        return None


def mark_dispatched(fire: FireModel, now_ms: int) -> None:
    fire.update(actions=[M.started_at.set(max(int(fire.fire_at), now_ms))], condition=M.status.is_in(*OPEN))


def settle(fire: FireModel, status: str, now_ms: int, error: str | None) -> bool:
    """Move a Fire to its final status once; only the winner counts it toward auto-pause."""
    actions: list[Any] = [M.status.set(status), M.finished_at.set(now_ms), M.open_shard.remove()]
    if error:
        actions.append(M.error.set(error[:500]))
    return update_if(fire, actions, M.status.is_in(*OPEN))


def run_ids_of(fire: FireModel) -> list[str]:
    """The ids of the Task Runs the Fire created (or will create, if its dispatch was interrupted)."""
    return list(fire.run_ids)


def runs_of(fire: FireModel) -> list[tuple[str, str]]:
    """(endpoint_id, run_id) of each Task Run of the Fire."""
    return list(zip(fire.endpoint_ids, fire.run_ids, strict=True))


def open_fires_of(schedule_id: str, *, recent_from_ms: int | None = None) -> Iterator[FireModel]:
    """The schedule's unsettled Fires (dispatched ahead, running, or waiting for retries). The
    `open_fires` index is eventually consistent and may not show a Fire written a moment ago, so
    those from `recent_from_ms` on are read from the table itself, strongly consistent."""
    seen: set[int] = set()
    if recent_from_ms is not None:
        for fire in open_from(schedule_id, recent_from_ms):
            seen.add(int(fire.fire_at))
            yield fire
    for fire in M.open_fires.query(open_shard(schedule_id), filter_condition=M.schedule_id == schedule_id):
        if int(fire.fire_at) not in seen:
            yield fire


def open_from(schedule_id: str, from_ms: int) -> Iterator[FireModel]:
    """The schedule's unsettled Fires at or after `from_ms`, read from the table (consistent)."""
    yield from M.query(
        schedule_id,
        range_key_condition=M.fire_at >= from_ms,
        filter_condition=M.status.is_in(*OPEN),
        consistent_read=True,
    )


def interrupted(shard: str, before_ms: int) -> Iterator[FireModel]:
    """Open Fires whose dispatch never completed (a scan crashed between creating and enqueuing)."""
    yield from M.open_fires.query(
        shard, range_key_condition=M.fire_at < before_ms, filter_condition=M.started_at.does_not_exist()
    )


def recent(
    schedule_id: str, limit: int, now_ms: int, cursor: dict[str, Any] | None = None
) -> Page[FireModel]:
    """Fires newest first (including those dispatched ahead of time), expired ones left out."""
    alive = M.expires_at.does_not_exist() | (M.expires_at > now_ms // 1000)
    return query_page(M, schedule_id, limit, cursor, newest_first=True, filter_condition=alive)


def any_after(schedule_id: str, after_ms: int, until_ms: int) -> bool:
    """Whether a Fire in (after_ms, until_ms] exists that was not missed (it ran or is running)."""
    result = M.query(
        schedule_id,
        range_key_condition=M.fire_at.between(after_ms + 1, until_ms),
        filter_condition=M.status != MISSED,
        limit=1,
    )
    return next(iter(result), None) is not None
