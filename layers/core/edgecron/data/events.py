"""Events, and the paged read of an App's Endpoints that the fan-out walks.

Every read is keyed by app_id (the hash key of both tables), so a fan-out never sees another App's
Endpoints. The Endpoints each page matched are one item per page in FanoutPagesTable, recorded in
one transaction with the Event's counters (`page_count`, `matched_count`, `fanout_status`), so a page
processed twice (a duplicated message, a crash before the page was recorded) is recorded once and
the Event item never grows with the number of Endpoints."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data import fanout_pages, usage
from edgecron.data.conditional import error_code, update_if
from edgecron.data.expiry import expires_at_s
from edgecron.data.keys import alive, items_of_entries, time_window
from edgecron.data.models import DueMarkModel, EndpointModel, EventModel
from edgecron.data.paging import Page, query_page
from edgecron.domain.endpoints import Subscriber
from edgecron.domain.events import Event
from edgecron.domain.expiry import is_alive
from edgecron.domain.fanout_pages import FanoutPage
from edgecron.domain.vocabulary import DisabledReason, FanoutStatus

M = EventModel
PENDING, RUNNING, DONE, FAILED = (
    FanoutStatus.PENDING,
    FanoutStatus.RUNNING,
    FanoutStatus.DONE,
    FanoutStatus.FAILED,
)
OPEN = (PENDING, RUNNING)
_MATCH_ATTRIBUTES = ["app_id", "endpoint_id", "active", "disabled_reason", "filter_events"]
_CONDITION_FAILED = "ConditionalCheckFailed"
# A fan-out message sent at the publish starts its first page within seconds; one that has not by
# then was lost (or never sent): longer than the fan-out function's timeout, so a slow first page
# is not sent twice (a second send would only repeat work: pages and runs are written once).
FANOUT_WAKE_MS = 180_000


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def to_entity(row: EventModel) -> Event:
    return Event(
        app_id=row.app_id,
        event_id=row.event_id,
        name=row.name,
        created_at=int(row.created_at),
        payload=row.payload,
        idempotency_key=row.idempotency_key,
        fanout_status=FanoutStatus(row.fanout_status),
        fanout_error=row.fanout_error,
        endpoint_ids=tuple(row.endpoint_ids) if row.endpoint_ids is not None else None,
        matched_count=_int(row.matched_count),
        page_count=_int(row.page_count),
        expires_at=_int(row.expires_at),
    )


def _key(event: Event) -> EventModel:
    return M(app_id=event.app_id, event_id=event.event_id)


def new_event(
    app_id: str,
    name: str,
    payload: Any,
    now_ms: int,
    *,
    event_id: str | None = None,
    idempotency_key: str | None = None,
) -> Event:
    """An Event as it is stored when published: fan-out pending, no Endpoint matched yet."""
    return Event(
        app_id=app_id,
        event_id=event_id or ids.new_id("evt", now_ms),
        name=name,
        payload=payload,
        idempotency_key=idempotency_key,
        fanout_status=FanoutStatus.PENDING,
        matched_count=0,
        page_count=0,
        created_at=now_ms,
        expires_at=expires_at_s(now_ms),
    )


def _row(event: Event) -> EventModel:
    return M(
        app_id=event.app_id,
        event_id=event.event_id,
        name=event.name,
        payload=event.payload,
        idempotency_key=event.idempotency_key,
        fanout_status=str(event.fanout_status),
        matched_count=event.matched_count,
        page_count=event.page_count,
        created_at=event.created_at,
        expires_at=event.expires_at,
        # the scan sends the fan-out again if its first page is not recorded by then
        fanout_shard=_fanout_shard(event.event_id),
        fanout_wake_at=event.created_at + FANOUT_WAKE_MS,
    )


def _fanout_shard(event_id: str) -> str:
    return ids.shard_of(event_id, get_settings().shards)


def put_new(event: Event) -> None:
    """Store a new Event (never over another one); its fan-out counters start at zero."""
    _row(event).save(condition=M.event_id.does_not_exist())


def put_new_billed(event: Event, month: str) -> bool:
    """Store a new Event and count it as one billable trigger of `month`, in one transaction: the
    count is the Event's own conditional put, so a put repeated after a lost answer (or by a retry)
    neither stores nor counts twice. False: the Event was stored (and counted) before."""
    try:
        with fanout_pages.transaction() as tx:
            tx.save(_row(event), condition=M.event_id.does_not_exist())
            tx.update(*usage.counted(event.app_id, month, "event"))
    except TransactWriteError as exc:
        if error_code(exc) != "TransactionCanceledException":
            raise
        reasons = [fanout_pages.reason_code(reason) for reason in exc.cancellation_reasons]
        if reasons and reasons[0] == _CONDITION_FAILED:
            return False
        raise
    return True


def delete(app_id: str, event_id: str) -> None:
    M(app_id=app_id, event_id=event_id).delete()


def get(app_id: str, event_id: str, *, consistent: bool = False) -> Event | None:
    try:
        return to_entity(M.get(app_id, event_id, consistent_read=consistent))
    except DoesNotExist:
        return None


def get_for_app(app_id: str, event_id: str, now_ms: int) -> Event | None:
    event = get(app_id, event_id)
    if event is None or not is_alive(event.expires_at, now_ms):
        return None
    return event


def id_floor(ms: int) -> str:
    """The smallest possible event id created at `ms` (ids are time-sortable ULIDs)."""
    return ids.new_id("evt", ms)[:14]


def list_page(
    app_id: str,
    limit: int,
    cursor: dict[str, Any] | None,
    now_ms: int,
    *,
    name: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> Page[Event]:
    """Newest first; the time window is a key condition on the time-sortable event id."""
    rk = time_window(M.event_id, since_ms, until_ms, floor=id_floor)
    cond = alive(M, now_ms)
    if name:
        cond &= M.name == name
    page = query_page(M, app_id, limit, cursor, range_key_condition=rk, filter_condition=cond)
    return Page([to_entity(row) for row in page.items], page.last_key)


def endpoints_page(app_id: str, after: str | None, limit: int) -> tuple[list[Subscriber], bool]:
    """Up to `limit` Endpoints of the App in id order after `after`, and whether more remain.
    Strongly consistent, so an Endpoint created just before a publish is seen by its fan-out.
    Only the attributes matching needs are read (never the signing secrets)."""
    rk = EndpointModel.endpoint_id > after if after else None
    items = list(
        EndpointModel.query(
            app_id,
            range_key_condition=rk,
            limit=limit + 1,
            page_size=limit + 1,
            consistent_read=True,
            attributes_to_get=_MATCH_ATTRIBUTES,
        )
    )
    subscribers = [
        Subscriber(
            endpoint_id=row.endpoint_id,
            active=bool(row.active),
            disabled_reason=DisabledReason(row.disabled_reason) if row.disabled_reason else None,
            filter_events=tuple(row.filter_events or ()),
        )
        for row in items[:limit]
    ]
    return subscribers, len(items) > limit


def record_page(event: Event, page: FanoutPage) -> str:
    """Record one page of the Event's fan-out with the Event's counters, all or nothing; pages are
    recorded in order. Returns recorded | exists (an earlier delivery recorded it) | gone."""
    n = page.page
    in_order = (M.page_count == n) if n else (M.page_count.does_not_exist() | (M.page_count == 0))
    actions: list[Any] = [
        M.fanout_status.set(RUNNING if page.more else DONE),
        M.page_count.set(n + 1),
        M.matched_count.add(len(page.endpoint_ids)),
    ]
    if n == 0:  # the fan-out has started: the scan need not send it again
        actions += [M.fanout_shard.remove(), M.fanout_wake_at.remove()]
    reasons = fanout_pages.record(page, (_key(event), actions, M.event_id.exists() & in_order))
    if not reasons:
        return "recorded"
    if reasons[0] == _CONDITION_FAILED:
        return "exists"
    if get(event.app_id, event.event_id, consistent=True) is None:
        return "gone"
    raise RuntimeError(f"fan-out page {n} of {event.event_id} is out of order ({reasons})")


def fanout_left_behind(shard: int, now_ms: int, limit: int) -> list[Event]:
    """Events of one shard whose fan-out has not recorded its first page by its wake time (the
    fan-out message was never sent, or got lost), oldest first, at most `limit`."""
    entries = M.fanout_wake.query(str(shard), range_key_condition=M.fanout_wake_at <= now_ms, limit=limit)
    rows = items_of_entries(
        M,
        ((entry.app_id, entry.event_id) for entry in entries),
        lambda row: (row.app_id, row.event_id),
        lambda row: row.fanout_wake_at is not None and int(row.fanout_wake_at) <= now_ms,
    )
    return [to_entity(row) for row in rows]


def wake_fanout_later(event: Event, wake_at_ms: int) -> bool:
    """Move the Event's fan-out wake time on (its message was just sent again); False once the
    fan-out recorded its first page."""
    return update_if(_key(event), [M.fanout_wake_at.set(wake_at_ms)], M.fanout_wake_at.exists())


def mark_failed(app_id: str, event_id: str, reason: str) -> bool:
    """A fan-out the queue gave up on: the Event shows why, until a re-drive resumes it."""
    return update_if(
        M(app_id=app_id, event_id=event_id),
        [M.fanout_status.set(FAILED), M.fanout_error.set(reason[:500])],
        M.event_id.exists() & M.fanout_status.is_in(*OPEN),
    )


def reopen(event: Event) -> bool:
    """failed → running (a re-drive); only one of two concurrent re-drives wins."""
    return update_if(
        _key(event), [M.fanout_status.set(RUNNING), M.fanout_error.remove()], M.fanout_status == FAILED
    )


def mark_done(event: Event) -> bool:
    return update_if(_key(event), [M.fanout_status.set(DONE), M.fanout_error.remove()], M.event_id.exists())


def matched(event: Event) -> int:
    """How many Endpoints the fan-out matched so far."""
    return event.matched


def matched_pages(event: Event, start: int = 0) -> Iterator[tuple[int, list[str]]]:
    """(page number, matched Endpoint ids) in fan-out order from page `start`. An Event stored
    before pages existed lists its ids itself: they are its page 0."""
    if event.endpoint_ids:
        if start == 0:
            yield 0, list(event.endpoint_ids)
        return
    for page in fanout_pages.pages(event.event_id, start):
        yield page.page, list(page.endpoint_ids)


# --- pending Events stored before fan-outs had a wake time ---------------------------------------
_WALK_PARTITION, _WALK_KEY = "#scan", "due"  # the scan's walk mark (data/schedules.py)


def unwoken_walk() -> tuple[bool, dict[str, Any] | None]:
    """(done?, the table key the walk goes on from): whether every pending Event stored without a
    fan-out wake time was given one."""
    try:
        row = DueMarkModel.get(_WALK_PARTITION, _WALK_KEY, consistent_read=True)
    except DoesNotExist:
        return False, None
    return row.fanout_woken_at is not None, row.fanout_wake_from


def save_unwoken_walk(start: dict[str, Any] | None, now_ms: int) -> None:
    """Record where the walk goes on from; with no `start` left, that it is done."""
    row = DueMarkModel(_WALK_PARTITION, _WALK_KEY)
    if start is None:
        row.update([DueMarkModel.fanout_woken_at.set(now_ms), DueMarkModel.fanout_wake_from.remove()])
    else:
        row.update([DueMarkModel.fanout_wake_from.set(start)])


def wake_unwoken(now_ms: int, start: dict[str, Any] | None, limit: int) -> tuple[int, dict[str, Any] | None]:
    """Give a fan-out wake time of `now_ms` (and its shard) to the pending Events, among up to `limit`
    read from `start`, that were stored before fan-outs carried one and have recorded no page, so
    the scan's re-drive (`fanout_left_behind`) finds them. Returns how many were woken and where to
    go on from (None: the whole table was read). Each write is conditional on the Event as read."""
    unwoken = (
        (M.fanout_status == PENDING)
        & M.fanout_wake_at.does_not_exist()
        & (M.page_count.does_not_exist() | (M.page_count == 0))
    )
    pages = M.scan(filter_condition=unwoken, last_evaluated_key=start, page_size=limit).page_iter
    page = next(pages, None)
    rows = [M.from_raw_data(raw) for raw in (page or {}).get("Items", [])]
    woken = 0
    for row in rows:
        woken += update_if(
            M(app_id=row.app_id, event_id=row.event_id),
            [M.fanout_shard.set(_fanout_shard(row.event_id)), M.fanout_wake_at.set(now_ms)],
            unwoken & M.event_id.exists(),
        )
    return woken, pages.last_evaluated_key if page is not None else None
