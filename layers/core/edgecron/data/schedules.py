"""Schedules. Reads return `Schedule` entities and writes take them; a conditional write returns
the Schedule as stored, or None when its condition failed. Only ACTIVE schedules with a next fire
time carry `due_shard`, so the sparse due index holds exactly what the scan may have to dispatch;
the shard and the slot (domain/due_slots.py) are this module's alone, every write of `next_fire_at`
sets the slot that goes with it, and every move of `next_fire_at` is a CAS."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data.conditional import save_if, update_if
from edgecron.data.keys import at_version, items_of_entries
from edgecron.data.models import DueMarkModel, ScheduleModel
from edgecron.data.paging import Page, query_page
from edgecron.domain import due_slots
from edgecron.domain.schedules import Schedule
from edgecron.domain.vocabulary import MissedPolicy, OverlapPolicy, ScheduleStatus

M = ScheduleModel


def shard_for(schedule_id: str) -> str:
    return ids.shard_of(schedule_id, get_settings().shards)


CLOCK_MARGIN_MS = 10_000  # how far apart the clocks of two Lambda invocations may be


def _slot(schedule: Schedule, next_fire_ms: int, written_ms: int, *, walked_to: int | None = None) -> int:
    """The due slot of `schedule` with its next fire at `next_fire_ms`, written at `written_ms`
    (`walked_to`: by the scan's due walk, which started from that mark and goes on from there)."""
    settled_ms = get_settings().lookahead_sec * 1000 + CLOCK_MARGIN_MS
    wheel = due_slots.wheel_of(schedule.spec())
    return due_slots.slot_of(wheel, next_fire_ms, written_ms, settled_ms, walked_to=walked_to)


def _slot_is(slot: int | None) -> Any:
    """The condition that the stored slot is still the one read (an advance that leaves it in place
    writes nothing to the index, so it must know what is there)."""
    return M.due_slot.does_not_exist() if slot is None else M.due_slot == slot


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _pairs(flat: list[float] | None) -> tuple[tuple[int, int], ...]:
    """The pauses stored flat (began, resumed, ...) as pairs."""
    values = [int(v) for v in flat or ()]
    return tuple(zip(values[0::2], values[1::2], strict=False))


def to_entity(row: ScheduleModel, walked_to: int | None = None) -> Schedule:
    """The Schedule an item holds; with `walked_to` (how far the scan's due walk got), one on a wheel
    slot or the every-tick key has the next fire the walk left it (Schedule.walked_past), not the
    stored one."""
    schedule = _stored(row)
    return schedule.walked_past(walked_to) if walked_to is not None and _walked(row) else schedule


def _walked(row: ScheduleModel) -> bool:
    """Whether the due walk, not a write, moves the schedule past its fires (see advance)."""
    return due_slots.walk_moves(_opt_int(row.due_slot)) and row.next_fire_at is not None


def _stored(row: ScheduleModel) -> Schedule:
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
        turn_at=_opt_int(row.turn_at),
        next_turn_at=_opt_int(row.next_turn_at),
        next_fire_at=_opt_int(row.next_fire_at),
        finished=bool(row.finished),
        missed_left_out=int(row.missed_left_out or 0),
        last_fire_at=_opt_int(row.last_fire_at),
        timing_since=_opt_int(row.timing_since),
        paused_since=_opt_int(row.paused_since),
        pauses=_pairs(row.pauses),
        version=int(row.version or 0),
        as_stored=_Stored(_opt_int(row.due_slot), _opt_int(row.next_fire_at)),
    )


@dataclass(frozen=True)
class _Stored:
    """A Schedule's bookkeeping as this layer read it: its due index entry and its next_fire_at as
    stored (Schedule.as_stored). Its compare-and-set writes check them; nothing else reads them."""

    due_slot: int | None = None
    next_fire_at: int | None = None


_NOT_STORED = _Stored()


def _as_stored(schedule: Schedule) -> _Stored:
    held = schedule.as_stored
    return held if isinstance(held, _Stored) else _NOT_STORED


def walk_moves(schedule: Schedule) -> bool:
    """Whether the scan's due walk moves this schedule past its fires, not a write of its own (a day
    or hour wheel entry, or the every-tick key, as it was read)."""
    return due_slots.walk_moves(_as_stored(schedule).due_slot)


def _row(schedule: Schedule) -> ScheduleModel:
    """The whole item of a Schedule, with the `due_shard` and `due_slot` its status and timing call
    for: the due index holds exactly the ACTIVE schedules with a next fire time."""
    active = schedule.status == ScheduleStatus.ACTIVE and schedule.next_fire_at is not None
    slot = (
        _slot(schedule, schedule.next_fire_at, schedule.updated_at)
        if active and schedule.next_fire_at is not None
        else None
    )
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
        turn_at=schedule.turn_at,
        next_turn_at=schedule.next_turn_at,
        next_fire_at=schedule.next_fire_at,
        due_shard=shard_for(schedule.schedule_id) if active else None,
        due_slot=slot,
        finished=schedule.finished,
        missed_left_out=schedule.missed_left_out,
        last_fire_at=schedule.last_fire_at,
        timing_since=schedule.timing_since,
        paused_since=schedule.paused_since,
        pauses=[t for pause in schedule.pauses for t in pause] or None,
        version=schedule.version,
        created_at=schedule.created_at,
        updated_at=schedule.updated_at,
    )


def stored_item(schedule: Schedule) -> ScheduleModel:
    """The item a Schedule is stored as, index attributes included (for bulk loads)."""
    return _row(schedule)


def _key(schedule: Schedule) -> ScheduleModel:
    return M(app_id=schedule.app_id, schedule_id=schedule.schedule_id)


def _update(schedule: Schedule, actions: list[Any], condition: Any) -> Schedule | None:
    """A conditional update: the Schedule as stored after it, or None when the condition failed."""
    item = _key(schedule)
    return to_entity(item) if update_if(item, actions, condition) else None


def get(app_id: str, schedule_id: str, *, consistent: bool = False) -> Schedule | None:
    """The Schedule as stored: its status, settings and counters are exact; next_fire_at and
    last_fire_at are as stored (for a schedule on a wheel, no later than the real ones: get_timed
    has those). Reads one item, never the due walk's mark."""
    try:
        row = M.get(app_id, schedule_id, consistent_read=consistent)
    except DoesNotExist:
        return None
    return to_entity(row, None)


def get_timed(
    app_id: str, schedule_id: str, *, consistent: bool = False, walked_to: int | None = None
) -> Schedule | None:
    """The Schedule with the next fire the due walk left it, for a caller that dispatches it or
    compares and sets its timing: how far the walk got is `walked_to` if the caller knows it (the
    scan), else read from the mark (one more item, only for a schedule the walk moves)."""
    try:
        row = M.get(app_id, schedule_id, consistent_read=consistent)
    except DoesNotExist:
        return None
    if walked_to is None and _walked(row):
        walked_to = due_mark().mark
    return to_entity(row, walked_to)


def reload(schedule: Schedule) -> Schedule | None:
    """The schedule read again, strongly consistent, with its timing; None if it was deleted."""
    return get_timed(schedule.app_id, schedule.schedule_id, consistent=True)


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
    walked_to = due_mark().mark if any(_walked(row) for row in page.items) else None
    return Page([to_entity(row, walked_to) for row in page.items], page.last_key)


@dataclass(frozen=True)
class Due:
    """A schedule the due walk found, and when its window met its wheel slot (None for an exact or
    every-tick key, which every tick reads): the walk goes in that order."""

    schedule: Schedule
    met_at: int | None

    @property
    def order(self) -> int:
        """Exact and every-tick keys first (by key: lagging ones first), then the wheels' slots as the
        window meets them."""
        return (
            self.met_at
            if self.met_at is not None
            else int(_as_stored(self.schedule).due_slot or 0) - _EXACT_FIRST
        )


_EXACT_FIRST = 2**53  # exact keys sort before every wheel position


def due(shard: str, from_ms: int, until_ms: int, *, walked_to: int | None = None) -> Iterator[Due]:
    """The schedules of `shard` due by `until_ms`: every one whose entry is exact (lagging ones too)
    or read at every tick, then those on a wheel whose slot the window (`from_ms`, `until_ms`] passes
    (`from_ms`: how far the last tick got, `walked_to` if it recorded that), in the order the window
    meets them. A wheel schedule's next fire is the one the walk left it (to_entity)."""
    walks = [
        _due_entries(shard, lo, hi, from_ms, until_ms, walked_to)
        for lo, hi in due_slots.window_ranges(from_ms, until_ms)
    ]
    yield from heapq.merge(*walks, key=lambda found: found.order)


def _due_entries(
    shard: str, lo: int, hi: int, from_ms: int, until_ms: int, walked_to: int | None
) -> Iterator[Due]:
    """The schedules behind the `due_slots` entries of `shard` with a slot in [lo, hi], due by
    `until_ms`. The index holds keys only, so the schedules are read with consistent batch gets; an
    entry whose schedule is gone, left the index or is not due yet is left out."""
    entries = M.due_slots.query(shard, range_key_condition=M.due_slot.between(lo, hi))
    for row in items_of_entries(
        M,
        ((entry.app_id, entry.schedule_id) for entry in entries),
        lambda s: (s.app_id, s.schedule_id),
        lambda s: s.due_shard is not None and s.next_fire_at is not None and s.next_fire_at <= until_ms,
    ):
        schedule = to_entity(row, walked_to)
        yield Due(schedule, due_slots.met_at(int(_as_stored(schedule).due_slot or 0), from_ms))


MARK_PARTITION = "#scan"  # no App id starts with '#'
MARK_KEY = "due"


@dataclass(frozen=True)
class DueMark:
    """How far the last tick got in the due walk (None: no tick recorded it yet), and how far
    the backfill of slots for schedules an earlier release wrote has got."""

    mark: int | None
    backfilled: bool
    backfill_from: dict[str, Any] | None
    timing_stored: bool = False  # every schedule the walk advanced has its next fire stored
    timing_from: dict[str, Any] | None = None  # the table key the store goes on from


def due_mark() -> DueMark:
    try:
        row = DueMarkModel.get(MARK_PARTITION, MARK_KEY, consistent_read=True)
    except DoesNotExist:
        return DueMark(None, False, None)
    return DueMark(
        _opt_int(row.mark),
        row.backfilled_at is not None,
        row.backfill_from,
        row.timing_stored_at is not None,
        row.timing_from,
    )


def move_due_mark(to_ms: int) -> bool:
    """Move the mark forward to `to_ms`; a tick that finished later with a later horizon keeps its own."""
    row = DueMarkModel(MARK_PARTITION, MARK_KEY)
    return update_if(
        row, [DueMarkModel.mark.set(to_ms)], DueMarkModel.mark.does_not_exist() | (DueMarkModel.mark < to_ms)
    )


def _table_page(
    filter_condition: Any, start: dict[str, Any] | None, limit: int
) -> tuple[list[ScheduleModel], dict[str, Any] | None]:
    """One page of a bounded walk of the table: the items of up to `limit` read from `start` that
    match, and where to go on from (None: the whole table was read)."""
    pages = M.scan(
        filter_condition=filter_condition,
        last_evaluated_key=start,
        page_size=limit,  # items read, before the filter: the work of one call is bounded
    ).page_iter
    page = next(pages, None)
    rows = [M.from_raw_data(raw) for raw in (page or {}).get("Items", [])]
    return rows, pages.last_evaluated_key if page is not None else None


def backfill_slots(
    now_ms: int, start: dict[str, Any] | None, limit: int
) -> tuple[int, dict[str, Any] | None]:
    """Give a slot to up to `limit` schedules in the due index that an earlier release wrote without
    one, reading the table from `start`. Returns how many were given one and where to go on from
    (None: the whole table was read). Each write is conditional on the schedule as read."""
    rows, start = _table_page(M.due_shard.exists() & M.due_slot.does_not_exist(), start, limit)
    done = 0
    for row in rows:
        schedule = to_entity(row)
        if schedule.next_fire_at is not None:
            done += update_if(
                _key(schedule),
                [M.due_slot.set(_slot(schedule, schedule.next_fire_at, now_ms))],
                (M.next_fire_at == schedule.next_fire_at)
                & M.due_shard.exists()
                & M.due_slot.does_not_exist(),
            )
    return done, start


def store_walked_timing(
    walked_to: int, start: dict[str, Any] | None, limit: int
) -> tuple[int, dict[str, Any] | None]:
    """Store the next fire time the walk left each schedule it advances (a lagging `next_fire_at`
    becomes exact), reading up to `limit` items of the table from `start`; returns how many were
    written and where to go on from (None: the whole table was read). Each write is conditional on
    the schedule as read: a writer that moved it first stored an exact time itself."""
    lagging = M.due_shard.exists() & (M.due_slot <= due_slots.TICK_SLOT) & (M.next_fire_at <= walked_to)
    rows, start = _table_page(lagging, start, limit)
    done = 0
    for row in rows:
        stored, walked = _stored(row), to_entity(row, walked_to)
        nxt, last = walked.next_fire_at, walked.last_fire_at
        if nxt is None or last is None or nxt == stored.next_fire_at:
            continue
        done += update_if(
            _key(stored),
            [M.next_fire_at.set(nxt), M.last_fire_at.set(last), M.version.add(1)],
            (M.next_fire_at == stored.next_fire_at)
            & _slot_is(_as_stored(stored).due_slot)
            & (M.status == ScheduleStatus.ACTIVE),
        )
    return done, start


def _save_progress(done_at: Any, going_on_from: Any, start: dict[str, Any] | None, now_ms: int) -> None:
    """Record on the mark item where a walk of the table goes on from; with no `start` left, when it
    was done."""
    row = DueMarkModel(MARK_PARTITION, MARK_KEY)
    if start is None:
        row.update([done_at.set(now_ms), going_on_from.remove()])
    else:
        row.update([going_on_from.set(start)])


def save_timing_progress(start: dict[str, Any] | None, now_ms: int) -> None:
    """Record where the store of walked timing goes on from; with no `start` left, that it is done."""
    _save_progress(DueMarkModel.timing_stored_at, DueMarkModel.timing_from, start, now_ms)


def forget_timing_stored() -> None:
    """The walk advances schedules again, so stored times lag again: a later store starts over."""
    DueMarkModel(MARK_PARTITION, MARK_KEY).update(
        [DueMarkModel.timing_stored_at.remove(), DueMarkModel.timing_from.remove()]
    )


def save_backfill(start: dict[str, Any] | None, now_ms: int) -> None:
    """Record where the backfill goes on from; with no `start` left, that it is done."""
    _save_progress(DueMarkModel.backfilled_at, DueMarkModel.backfill_from, start, now_ms)


def _timing_is(schedule: Schedule, expected_ms: int) -> Any:
    """The condition that the stored next fire time is still the one read: for a schedule the due
    walk moves, the stored one (which lags), else the fire time the caller moves it from."""
    stored = _as_stored(schedule).next_fire_at
    return M.next_fire_at == (stored if stored is not None else expected_ms)


def advance(
    schedule: Schedule,
    expected_ms: int,
    next_ms: int | None,
    now_ms: int,
    *,
    extra: list[Any] | None = None,
    walked_to: int | None = None,
    write_unmoved: bool = False,
) -> Schedule | None:
    """CAS `next_fire_at` from the fire just dispatched to the next one; a concurrent scan, catch-up
    or user edit that moved it first wins and this call changes nothing.

    `walked_to`: the scan's due walk, whose tick started from this mark, dispatched the fire and will
    record that it passed it. A schedule
    whose entry stays on its wheel slot or the every-tick key is then not written at all: its stored
    next fire time lags, and a read takes the next fire from how far the walk got (to_entity). The
    returned copy shows the move. `write_unmoved` writes it anyway (the walk does not advance
    schedules while a rollback is prepared: Settings.due_walk_advances)."""
    actions: list[Any] = [
        M.updated_at.set(now_ms),
        M.last_fire_at.set(expected_ms),
        M.version.add(1),
        *(extra or []),
    ]
    if next_ms is None:
        actions += [M.next_fire_at.remove(), *_out_of_index(), *_end_if_windowed(schedule)]
    else:
        moves = _slot_moves(schedule, next_ms, now_ms, walked_to=walked_to)
        if (
            walked_to is not None
            and not write_unmoved
            and not moves
            and not extra
            and due_slots.walk_moves(_as_stored(schedule).due_slot)
        ):
            return replace(schedule, next_fire_at=next_ms, last_fire_at=expected_ms)
        actions += [M.next_fire_at.set(next_ms), *moves]
    return _update(
        schedule,
        actions,
        _timing_is(schedule, expected_ms)
        & (M.status == ScheduleStatus.ACTIVE)
        & _slot_is(_as_stored(schedule).due_slot),
    )


def owe(schedule: Schedule, fire_at_ms: int, now_ms: int) -> bool:
    """Record that the schedule still owes the fire at `fire_at_ms` (its dispatch failed): its entry
    leaves its wheel for the exact key of that time, which every tick reads until a dispatch moves
    it on, so the due walk may pass its wheel slot without losing the fire. False if another writer
    moved it first (that write put it where it belongs)."""
    return update_if(
        _key(schedule),
        [
            M.next_fire_at.set(fire_at_ms),
            M.due_slot.set(fire_at_ms),
            M.updated_at.set(now_ms),
            M.version.add(1),
        ],
        _timing_is(schedule, fire_at_ms)
        & (M.status == ScheduleStatus.ACTIVE)
        & _slot_is(_as_stored(schedule).due_slot)
        & M.due_shard.exists(),
    )


def _out_of_index() -> list[Any]:
    return [M.due_shard.remove(), M.due_slot.remove()]


def _slot_moves(schedule: Schedule, next_ms: int, now_ms: int, *, walked_to: int | None = None) -> list[Any]:
    """The write of the slot that goes with a next fire at `next_ms`; none when the stored one (as
    read, which the write's condition checks) is that slot already: the index entry stays still."""
    slot = _slot(schedule, next_ms, now_ms, walked_to=walked_to)
    return [] if slot == _as_stored(schedule).due_slot else [M.due_slot.set(slot)]


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
    `pause_reason(failures)` as the schedule's pause reason. Both count only while the schedule is
    ACTIVE, or ENDED before its end_at (stored ENDED once its last fire was dispatched ahead, it
    still fires): a paused schedule keeps the count that paused it (a success that ends late, its
    request made before the pause, does not reset it; resuming does), and one past its end_at too.
    Returns (consecutive_failures, paused_now). Atomic conditional updates, no read-modify-write."""
    schedule = M(app_id=app_id, schedule_id=schedule_id)
    firing = (M.status == ScheduleStatus.ACTIVE) | ((M.status == ScheduleStatus.ENDED) & (M.end_at >= now_ms))
    if not failed:
        update_if(
            schedule,
            [M.consecutive_failures.set(0), M.version.add(1)],
            M.schedule_id.exists() & firing,
        )
        return 0, False
    counted = update_if(
        schedule,
        [M.consecutive_failures.add(1), M.version.add(1), M.updated_at.set(now_ms)],
        M.schedule_id.exists() & firing,
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
            M.paused_since.set(now_ms),
            *_out_of_index(),
            M.version.add(1),
            M.updated_at.set(now_ms),
            *([M.pause_reason.set(pause_reason(failures))] if pause_reason is not None else []),
        ],
        firing & (M.consecutive_failures >= pause_after),
    )
    return failures, paused


def take_turn(schedule: Schedule, fire_at_ms: int, seen_running: int | None) -> bool:
    """The fire at `fire_at_ms` starts under the overlap policy: it holds the turn from now on (in
    place of `seen_running`, the holder read, which settled), and is no longer the buffered one.
    Fails when another writer moved the turn since it was read."""
    seen = M.turn_at.does_not_exist() if seen_running is None else M.turn_at == seen_running
    actions: list[Any] = [M.turn_at.set(fire_at_ms), M.version.add(1)]
    if schedule.next_turn_at == fire_at_ms:
        actions.append(M.next_turn_at.remove())
    return update_if(_key(schedule), actions, M.schedule_id.exists() & (seen | (M.turn_at == fire_at_ms)))


def wait_for_turn(schedule: Schedule, fire_at_ms: int, seen_buffered: int | None) -> bool:
    """The fire at `fire_at_ms` is the one waiting behind the running Fire (in place of
    `seen_buffered`, one read that no longer waits); fails when another took the place first."""
    seen = M.next_turn_at.does_not_exist() if seen_buffered is None else M.next_turn_at == seen_buffered
    return update_if(
        _key(schedule),
        [M.next_turn_at.set(fire_at_ms), M.version.add(1)],
        M.schedule_id.exists() & (seen | (M.next_turn_at == fire_at_ms)),
    )


def release_turn(
    schedule: Schedule, fire_at_ms: int, start_ms: int | None, seen_buffered: int | None
) -> bool:
    """The Fire holding the turn settled: hand it to the buffered fire `start_ms` (None: free it,
    and drop a buffered entry that no longer waits). Fails when the turn moved since it was read."""
    buffered = M.next_turn_at.does_not_exist() if seen_buffered is None else M.next_turn_at == seen_buffered
    running: list[Any] = [M.turn_at.remove()] if start_ms is None else [M.turn_at.set(start_ms)]
    return update_if(
        _key(schedule),
        [*running, M.next_turn_at.remove(), M.version.add(1)],
        (M.turn_at == fire_at_ms) & buffered,
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
    walked_to: int | None = None,
) -> Schedule | None:
    """CAS after a catch-up: move `next_fire_at` past the missed fire times and count the MISSED
    rows left out by the cap. Fails when a scan, another catch-up or a user edit moved it first.
    `walked_to`: by the scan's due walk from that mark, which dispatches from there on (the slot, as
    for advance)."""
    actions: list[Any] = [M.updated_at.set(now_ms), M.version.add(1), M.missed_left_out.add(left_out)]
    if next_ms is None:
        actions += [M.next_fire_at.remove(), *_out_of_index(), *_end_if_windowed(schedule)]
    else:
        actions += [M.next_fire_at.set(next_ms), *_slot_moves(schedule, next_ms, now_ms, walked_to=walked_to)]
    if finish:
        actions.append(M.finished.set(True))
    return _update(
        schedule,
        actions,
        _timing_is(schedule, expected_ms)
        & (M.status == ScheduleStatus.ACTIVE)
        & _slot_is(_as_stored(schedule).due_slot),
    )
