"""Fires: one row per (schedule_id, fire_at), created with a conditional put, the exactly-once
anchor (the Fire's key and its runs' ids are deterministic, so a second dispatch of the same fire
time writes nothing new). A broadcast Fire (`paged`) keeps `open_shard`, and with it an entry in the
sparse, keys-only `open_fire_keys` index, from its creation until it settles; `started_at` is set
once its last fan-out page is recorded, so one open without it was interrupted mid-dispatch. A Fire
bound to listed Endpoints enters that index only if a run of it waits for a retry (track_open).

A Fire bound to listed Endpoints keeps their ids and its run ids on the item; a broadcast Fire keeps
them in FanoutPagesTable, one item per page, and counts them (`run_count`, `page_count`).
run_id_pages and all_run_ids read both layouts.

Every function takes and returns the domain's `Fire`; the items, their keys, `open_shard` and
`expires_at` stay in this module. A write returns the Fire as it stored it, or None when its
condition failed (someone else won)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data import fanout_pages, usage
from edgecron.data.conditional import save_if, update_if
from edgecron.data.expiry import expires_at_s
from edgecron.data.keys import alive
from edgecron.data.models import FireModel, ScheduleModel
from edgecron.data.paging import Page, query_page
from edgecron.domain import fires as fire_domain
from edgecron.domain.fanout_pages import FanoutPage
from edgecron.domain.fires import Fire
from edgecron.domain.vocabulary import FireStatus, ScheduleStatus, Source

M = FireModel
OPEN = tuple(sorted(fire_domain.OPEN))
_CONDITION_FAILED = "ConditionalCheckFailed"
S = ScheduleModel


def open_shard(schedule_id: str) -> str:
    return ids.shard_of(schedule_id, get_settings().shards)


def run_id(schedule_id: str, fire_at_ms: int, endpoint_id: str) -> str:
    """The Task Run of a fire at an Endpoint: the same triple always gives the same id, time-ordered
    by the fire time (an App's runs are listed in id order)."""
    return ids.keyed_id("run", fire_at_ms, schedule_id, str(fire_at_ms), endpoint_id)


def create(
    schedule_id: str,
    fire_at_ms: int,
    app_id: str,
    endpoint_ids: list[str],
    run_ids: list[str],
    now_ms: int,
    *,
    status: str = FireStatus.SCHEDULED,
    error: str | None = None,
    paged: bool = False,
    manual: bool = False,
    due_at_ms: int | None = None,
    overlap: str | None = None,
    waits_long: bool = False,
) -> tuple[Fire, bool]:
    """Create the Fire unless it exists (one conditional put: its key is the exactly-once anchor);
    returns (the stored Fire, created?). Whether the schedule may still fire at this time is the
    caller's check (a fresh read before, a re-read before its runs are sent, and the compare-and-set
    advance after). A Fire bound to listed Endpoints is dispatched by the call that creates it and,
    if that call dies, again by the next scan from the schedule's `due` entry (the schedule moves
    past this time last), so it carries `started_at` at once and stays out of `open_fire_keys`; a
    broadcast Fire enters that index until it settles (its fan-out may be cut short by a crash).
    A Fire under an overlap policy (`overlap`) is admitted at its due time, not at its dispatch: it
    enters the index too, without `started_at`, so the scan re-drives an admission a crash cut short.
    So does one whose runs wait long past its fire time (`waits_long`, a jitter): a pause looks for
    open Fires among the recent ones and in the index, and must find it however old it gets."""
    is_open = status in OPEN
    gated = overlap is not None and is_open
    fire = M(
        schedule_id=schedule_id,
        fire_at=fire_at_ms,
        app_id=app_id,
        status=status,
        endpoint_ids=endpoint_ids,
        run_ids=run_ids,
        paged=paged,
        run_count=0 if paged else len(run_ids),
        page_count=0 if paged else None,
        created_at=now_ms,
        error=error,
        open_shard=open_shard(schedule_id) if is_open and (paged or gated or waits_long) else None,
        started_at=max(fire_at_ms, now_ms) if is_open and not paged and not gated else None,
        finished_at=None if is_open else now_ms,
        manual=True if manual else None,
        due_at=due_at_ms,
        overlap=overlap if gated else None,
        billed_with_runs=True if is_open else None,
        expires_at=expires_at_s(now_ms),
    )
    if save_if(fire, M.fire_at.does_not_exist()):
        return entity(fire), True
    existing = get(schedule_id, fire_at_ms)
    if existing is None:  # expired and deleted between the two calls: treat as new
        return create(
            schedule_id,
            fire_at_ms,
            app_id,
            endpoint_ids,
            run_ids,
            now_ms,
            status=status,
            error=error,
            paged=paged,
            manual=manual,
            due_at_ms=due_at_ms,
            overlap=overlap,
        )
    return existing, False


def _key(fire: Fire) -> FireModel:
    """The item of a Fire, keys only: a write refreshes it with what it stored."""
    return M(schedule_id=fire.schedule_id, fire_at=fire.fire_at)


def _update(fire: Fire | FireModel, actions: list[Any], condition: Any) -> Fire | None:
    """One conditional write of a Fire (or of the item of its keys): the Fire as stored, or None."""
    row = _key(fire) if isinstance(fire, Fire) else fire
    return entity(row) if update_if(row, actions, condition) else None


def admit(fire: Fire, now_ms: int) -> Fire | None:
    """Let a gated Fire start (a buffered one is SCHEDULED again); None if it was admitted or
    settled meanwhile."""
    return _update(
        fire,
        [M.admitted_at.set(now_ms), M.status.set(FireStatus.SCHEDULED)],
        M.status.is_in(*OPEN) & M.admitted_at.does_not_exist(),
    )


def mark_buffered(fire: Fire) -> Fire | None:
    """A gated Fire waits behind the schedule's running one (BUFFER_ONE)."""
    return _update(
        fire,
        [M.status.set(FireStatus.BUFFERED)],
        M.status.is_in(FireStatus.SCHEDULED, FireStatus.BUFFERED) & M.admitted_at.does_not_exist(),
    )


def settle_unadmitted(fire: Fire, status: str, now_ms: int, error: str | None) -> Fire | None:
    """Settle a gated Fire that was never admitted (SKIPPED, or CANCELLED while it waited): it has
    no runs to settle from. Fails if it was admitted meanwhile (it then settles from its runs)."""
    return _settle(fire, status, now_ms, error, unadmitted=True)


def mark_dispatched(fire: Fire, now_ms: int) -> None:
    """Set `started_at` on a listed Fire written without it (by a release that set it after the
    send), once it is dispatched again, so the scan stops taking it for an interrupted one."""
    _update(fire, [M.started_at.set(max(fire.fire_at, now_ms))], M.status.is_in(*OPEN))


def track_open(fire: Fire) -> Fire | None:
    """Put a listed Fire into `open_fire_keys` once it outlives its first attempt (a run waits for a
    retry), so a pause or delete finds it however old it gets; settle takes it out again."""
    return _update(
        fire,
        [M.open_shard.set(open_shard(fire.schedule_id))],
        M.status.is_in(*OPEN) & M.open_shard.does_not_exist(),
    )


def get(schedule_id: str, fire_at_ms: int) -> Fire | None:
    try:
        return entity(M.get(schedule_id, fire_at_ms, consistent_read=True))
    except DoesNotExist:
        return None


def record_page(fire: Fire, page: FanoutPage, now_ms: int) -> str:
    """Record one fan-out page of a paged Fire with its counters, all or nothing, while the Fire is
    open and its schedule ACTIVE (or ENDED: its last fires go on); the last page also marks the Fire dispatched. Returns recorded |
    exists (an earlier delivery recorded it) | stopped (the Fire settled or the schedule was paused
    or deleted: the page's runs must not be delivered)."""
    n = page.page
    in_order = (M.page_count == n) if n else (M.page_count.does_not_exist() | (M.page_count == 0))
    actions: list[Any] = [
        M.page_count.set(n + 1),
        M.run_count.add(len(page.endpoint_ids)),
        M.progress_at.set(now_ms),
    ]
    if not page.more:
        actions.append(M.started_at.set(max(fire.fire_at, now_ms)))
    owner = _key(fire)
    bills = n == 0 and fire.billed_with_runs
    reasons = fanout_pages.record(
        page,
        (owner, actions, M.status.is_in(*OPEN) & in_order),
        [(S, fire.app_id, fire.schedule_id, S.status.is_in(ScheduleStatus.ACTIVE, ScheduleStatus.ENDED))],
        # the first page bills the fire: recorded once, so counted once (data/usage.py)
        also=[usage.counted(fire.app_id, usage.month_of(now_ms), Source.SCHEDULE)] if bills else [],
    )
    if not reasons:
        return "recorded"
    if reasons[0] == _CONDITION_FAILED:
        return "exists"
    if any(code == _CONDITION_FAILED for code in reasons[1:]):
        current = get(fire.schedule_id, fire.fire_at)
        if current is not None and current.is_open and reasons[2] != _CONDITION_FAILED:
            raise RuntimeError(f"fan-out page {n} of a fire of {fire.schedule_id} is out of order")
        return "stopped"
    raise RuntimeError(f"fan-out page {n} of a fire of {fire.schedule_id} not recorded ({reasons})")


def run_pages(fire: Fire) -> Iterator[list[tuple[str, str]]]:
    """(endpoint_id, run_id) of the Fire's Task Runs, at most one fan-out page at a time, in fan-out
    order: the ids listed on the item, or the recorded pages of a broadcast Fire."""
    if not fire.paged:
        if fire.run_ids:
            yield list(zip(fire.endpoint_ids, fire.run_ids, strict=True))
        return
    owner = fanout_pages.fire_owner(fire.schedule_id, fire.fire_at)
    for page in fanout_pages.pages(owner):
        yield [(ep, run_id(fire.schedule_id, fire.fire_at, ep)) for ep in page.endpoint_ids]


def run_id_pages(fire: Fire) -> Iterator[list[str]]:
    """The Fire's run ids, at most one fan-out page at a time, in fan-out order."""
    for page in run_pages(fire):
        yield [rid for _, rid in page]


def all_run_ids(fire: Fire) -> list[str] | None:
    """Every run id of the Fire, or None while a paged Fire is still being fanned out (more runs
    are coming, so the Fire cannot settle yet)."""
    if fire.paged and fire.started_at is None:
        return None
    return run_ids_of(fire)


def count_settled_runs(fire: Fire, n: int = 1) -> Fire | None:
    """Count `n` runs of a broadcast Fire as final, while it is open; the Fire as counted shows
    whether every run it created is now counted (Fire.all_counted)."""
    return _update(fire, [M.settled_runs.add(n)], M.status.is_in(*OPEN))


def settle_from_run(
    schedule_id: str, fire_at_ms: int, status: str, now_ms: int, error: str | None
) -> Fire | None:
    """Settle a Fire its only run decides, without reading it; the settled Fire (as the write
    returned it), or None if it was settled already."""
    return _settle(M(schedule_id=schedule_id, fire_at=fire_at_ms), status, now_ms, error)


def settle(fire: Fire, status: str, now_ms: int, error: str | None) -> Fire | None:
    """Move a Fire to its final status once; only the winner counts it toward auto-pause."""
    return _settle(fire, status, now_ms, error)


def _settle(
    fire: Fire | FireModel, status: str, now_ms: int, error: str | None, *, unadmitted: bool = False
) -> Fire | None:
    actions: list[Any] = [M.status.set(status), M.finished_at.set(now_ms), M.open_shard.remove()]
    if error:
        actions.append(M.error.set(error[:500]))
    condition = M.status.is_in(*OPEN)
    return _update(fire, actions, condition & M.admitted_at.does_not_exist() if unadmitted else condition)


def run_ids_of(fire: Fire) -> list[str]:
    """The ids of the Task Runs the Fire created (or will create, if its dispatch was interrupted)
    so far; a broadcast Fire still being fanned out has more to come (see all_run_ids)."""
    return [rid for page in run_id_pages(fire) for rid in page]


def runs_of(fire: Fire) -> list[tuple[str, str]]:
    """(endpoint_id, run_id) of each Task Run of the Fire recorded so far."""
    return [pair for page in run_pages(fire) for pair in page]


def open_fires_of(schedule_id: str, *, recent_from_ms: int | None = None) -> Iterator[Fire]:
    """The schedule's unsettled Fires (dispatched ahead, running, or waiting for retries). The
    `open_fire_keys` index is eventually consistent and may not show a Fire written a moment ago, so
    those from `recent_from_ms` on are read from the table itself, strongly consistent."""
    seen: set[int] = set()
    if recent_from_ms is not None:
        for fire in open_from(schedule_id, recent_from_ms):
            seen.add(fire.fire_at)
            yield fire
    keys = M.open_fires.query(open_shard(schedule_id), filter_condition=M.schedule_id == schedule_id)
    for fire in _open_items(key for key in keys if int(key.fire_at) not in seen):
        yield fire


def _open_items(keys: Iterator[FireModel]) -> Iterator[Fire]:
    """The Fires behind keys read from the keys-only index, still open (the index may lag a settle)."""
    batch: list[tuple[str, int]] = []
    for key in keys:
        batch.append((key.schedule_id, int(key.fire_at)))
        if len(batch) == 100:
            yield from _still_open(batch)
            batch = []
    if batch:
        yield from _still_open(batch)


def _still_open(keys: list[tuple[str, int]]) -> Iterator[Fire]:
    found = {(f.schedule_id, int(f.fire_at)): f for f in M.batch_get(keys, consistent_read=True)}
    for key in keys:  # in index order
        row = found.get(key)
        if row is not None and row.status in OPEN:
            yield entity(row)


def open_from(schedule_id: str, from_ms: int) -> Iterator[Fire]:
    """The schedule's unsettled Fires at or after `from_ms`, read from the table (consistent)."""
    rows = M.query(
        schedule_id,
        range_key_condition=M.fire_at >= from_ms,
        filter_condition=M.status.is_in(*OPEN),
        consistent_read=True,
    )
    yield from (entity(row) for row in rows)


def open_before(shard: str, before_ms: int) -> Iterator[Fire]:
    """The open Fires of one shard of `open_fire_keys` whose fire time is before `before_ms`."""
    keys = M.open_fires.query(shard, range_key_condition=M.fire_at < before_ms)
    yield from _open_items(iter(keys))


def entity(row: FireModel) -> Fire:
    """The Fire a stored item holds, without its index and expiry attributes."""
    return Fire(
        schedule_id=row.schedule_id,
        fire_at=int(row.fire_at),
        app_id=row.app_id,
        status=FireStatus(row.status),
        created_at=int(row.created_at),
        endpoint_ids=tuple(row.endpoint_ids or ()),
        run_ids=tuple(row.run_ids or ()),
        paged=bool(row.paged),
        run_count=None if row.run_count is None else int(row.run_count),
        page_count=None if row.page_count is None else int(row.page_count),
        settled_runs=None if row.settled_runs is None else int(row.settled_runs),
        progress_at=None if row.progress_at is None else int(row.progress_at),
        started_at=None if row.started_at is None else int(row.started_at),
        finished_at=None if row.finished_at is None else int(row.finished_at),
        error=row.error,
        manual=bool(row.manual),
        due_at=None if row.due_at is None else int(row.due_at),
        overlap=row.overlap,
        admitted_at=None if row.admitted_at is None else int(row.admitted_at),
        listed_open=row.open_shard is not None,
        billed_with_runs=bool(row.billed_with_runs),
    )


def recent(schedule_id: str, limit: int, now_ms: int, cursor: dict[str, Any] | None = None) -> Page[Fire]:
    """Fires newest first (including those dispatched ahead of time), expired ones left out."""
    page = query_page(M, schedule_id, limit, cursor, newest_first=True, filter_condition=alive(M, now_ms))
    return Page([entity(row) for row in page.items], page.last_key)


def any_after(schedule_id: str, after_ms: int, until_ms: int) -> bool:
    """Whether a Fire in (after_ms, until_ms] exists that was not missed (it ran or is running)."""
    result = M.query(
        schedule_id,
        range_key_condition=M.fire_at.between(after_ms + 1, until_ms),
        filter_condition=M.status != FireStatus.MISSED,
        limit=1,
    )
    return next(iter(result), None) is not None


LATEST_FIRED_PAGE = 20  # Fires read per request while looking for the newest that fired


def latest_fired(schedule_id: str, now_ms: int) -> int | None:
    """The newest fire time up to `now_ms` at which the schedule fired: its Fire was dispatched and
    is running or ended COMPLETED or FAILED (not CANCELLED, MISSED or SKIPPED). Fires dispatched
    ahead of now are not read."""
    fired = (M.status.is_in(FireStatus.RUNNING, FireStatus.COMPLETED, FireStatus.FAILED)) | (
        (M.status == FireStatus.SCHEDULED) & M.started_at.exists()
    )
    rows = M.query(
        schedule_id,
        range_key_condition=M.fire_at <= now_ms,
        filter_condition=fired,
        scan_index_forward=False,
        page_size=LATEST_FIRED_PAGE,
        limit=1,
    )
    row = next(iter(rows), None)
    return None if row is None else int(row.fire_at)
