"""Event use cases for the API: publish (store, bill once, hand to the fan-out queue), look up, list,
re-drive a fan-out that failed.

Publishing answers before any Endpoint is matched: the fan-out function (services/fanout.py)
creates the Task Runs off the request path."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from edgecron import clock, ids
from edgecron.data import events as data
from edgecron.data import fanout_pages
from edgecron.data import runs as run_data
from edgecron.data.paging import Page
from edgecron.data.queues import send_fanout
from edgecron.domain.events import Event
from edgecron.domain.expiry import is_alive
from edgecron.domain.task_runs import TaskRun
from edgecron.errors import Conflict, NotFound, ParamInvalid
from edgecron.observability import logger
from edgecron.services import quota, usage
from edgecron.services.scan_work import Work, first_shard, item_failed
from edgecron.services.task_runs import check_payload

if TYPE_CHECKING:  # the API's request model: the functions other than the API never build it
    from edgecron.schemas.events import EventCreate


def run_id_for(event_id: str, endpoint_id: str) -> str:
    """The Task Run of an Event at an Endpoint: the same pair always gives the same id, time-ordered
    by the Event's creation (an App's runs are listed in id order)."""
    return ids.keyed_id("run", ids.ms_of(event_id) or 0, event_id, endpoint_id)


def publish(
    app_id: str,
    req: EventCreate,
    now: datetime,
    idempotency_key: str | None = None,
    event_id: str | None = None,
) -> Event:
    """Validate, check the quota, store the Event and count it as ONE billable trigger (one
    transaction: an Event is stored if and only if it is counted), enqueue its fan-out. Nothing is
    stored when a check fails. Once stored, the Event is never taken back: a fan-out message that
    cannot be sent is sent again by a retry of the publish (`finish`) or by the scan, which finds
    every Event whose fan-out has not started (`redrive_left_behind`)."""
    now_ms = clock.to_ms(now)
    check_payload(req.payload)
    quota.check_quota(app_id, now_ms)
    event = data.new_event(
        app_id, req.name, req.payload, now_ms, event_id=event_id, idempotency_key=idempotency_key
    )
    if data.put_new_billed(event, usage.month_of(now_ms)):
        usage.recorded()
        _send_first_page(event)
        return event
    stored = data.get(app_id, event.event_id, consistent=True)
    if stored is None:  # expired and deleted since: nothing to answer for
        raise NotFound(f"event {event.event_id} not found", "id")
    return finish(stored)


def _send_first_page(event: Event) -> bool:
    """Send the fan-out message of the Event's first page; a failure is left to the scan."""
    try:
        send_fanout(event.event_id, event.app_id)
        return True
    except Exception:
        logger.exception("fan-out message not sent; the scan sends it", extra={"event_id": event.event_id})
        return False


def finish(event: Event) -> Event:
    """Answer for a stored Event a publish may have left half done: a fan-out that has not
    started is sent again (pages and runs are written once, so a second message repeats nothing)."""
    if event.fanout_status == data.PENDING and not event.page_count:
        _send_first_page(event)
    return event


def recover(app_id: str, event_id: str) -> Event | None:
    """The Event an earlier publish with this id stored (strongly consistent), finished."""
    event = data.get(app_id, event_id, consistent=True)
    return None if event is None else finish(event)


REDRIVE_BATCH = 100  # Events per shard and scan tick


def left_behind_work(now_ms: int, shards: int, counts: dict[str, int]) -> Work:
    """The scan's step for fan-outs left pending, one step per Event: every Event whose first
    fan-out page is not recorded by its wake time (its message was never sent, or was lost) gets
    its fan-out message again, and its wake time moves on. Counted in `counts["fanouts_resent"]`."""
    counts.setdefault("fanouts_resent", 0)
    for i in range(shards):
        shard = (first_shard(now_ms, shards) + i) % shards
        for event in data.fanout_left_behind(shard, now_ms, REDRIVE_BATCH):
            try:
                if _send_first_page(event):
                    data.wake_fanout_later(event, now_ms + data.FANOUT_WAKE_MS)
                    counts["fanouts_resent"] += 1
            except Exception:
                item_failed("event fan-out", event.event_id)
            yield


WAKE_PAGE = 200  # Events read per page of the walk for pending fan-outs without a wake time


def wake_unwoken(now_ms: int, deadline: float) -> dict[str, int | bool]:
    """Once per stack (the deploy's catch-up runs it, until it has read the whole table): give every
    pending Event stored before fan-outs carried a wake time one, so the scan re-drives its fan-out.
    A page at a time, stopping at `deadline` (clock.monotonic); the next deploy goes on from there."""
    done, start = data.unwoken_walk()
    woken = 0
    while not done and clock.monotonic() < deadline:
        n, start = data.wake_unwoken(now_ms, start, WAKE_PAGE)
        woken += n
        data.save_unwoken_walk(start, now_ms)
        done = start is None
    return {"events_woken": woken, "events_walk_done": done}


def get(app_id: str, event_id: str, now_ms: int) -> Event:
    event = data.get_for_app(app_id, event_id, now_ms)
    if event is None:
        raise NotFound(f"event {event_id} not found", "id")
    return event


def matched(event: Event) -> int:
    """How many Endpoints the fan-out matched so far."""
    return event.matched


def list_page(
    app_id: str,
    limit: int,
    cursor: dict[str, Any] | None,
    now_ms: int,
    *,
    name: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Page[Event]:
    if since is not None and until is not None and since > until:
        raise ParamInvalid("since must not be after until", "since")
    return data.list_page(
        app_id,
        limit,
        cursor,
        now_ms,
        name=name,
        since_ms=clock.to_ms(since) if since else None,
        until_ms=clock.to_ms(until) if until else None,
    )


@dataclass(frozen=True)
class Delivery:
    endpoint_id: str
    run_id: str
    run: TaskRun | None  # None once the run expired


DeliveriesCursor = tuple[int, int]  # (fan-out page, index in that page)


def deliveries(
    event: Event, start: DeliveriesCursor, limit: int, now_ms: int
) -> tuple[list[Delivery], DeliveriesCursor | None]:
    """One page of the Event's matched Endpoints in fan-out order, with their Task Runs
    (batch-read), and where the next page starts (None at the end). Paged because a run item
    carries the payload; read from the fan-out pages, one small item per page."""
    first_page, index = start
    chosen: list[str] = []
    nxt: DeliveriesCursor | None = None
    for page_no, endpoint_ids in data.matched_pages(event, first_page):
        offset = index if page_no == first_page else 0
        room = limit - len(chosen)
        chosen += endpoint_ids[offset : offset + room]
        if offset + room < len(endpoint_ids):
            nxt = (page_no, offset + room)
            break
        if len(chosen) >= limit:
            nxt = (page_no + 1, 0)
            break
    run_ids = [run_id_for(event.event_id, endpoint_id) for endpoint_id in chosen]
    runs = {r.run_id: r for r in run_data.get_many(event.app_id, run_ids) if is_alive(r.expires_at, now_ms)}
    page = [Delivery(ep, rid, runs.get(rid)) for ep, rid in zip(chosen, run_ids, strict=True)]
    if nxt is not None and nxt[1] == 0 and not _has_more(event, nxt[0]):
        nxt = None
    return page, nxt


def _has_more(event: Event, page_no: int) -> bool:
    """Whether any matched Endpoint is listed from `page_no` on (pages may match none)."""
    return any(ids for _, ids in data.matched_pages(event, page_no))


def redrive(app_id: str, event_id: str, now_ms: int) -> Event:
    """Resume a fan-out that failed (marked so by the fan-out DLQ consumer) from its first page not
    yet continued. Pages already recorded are not repeated and their runs are not created twice."""
    event = get(app_id, event_id, now_ms)
    if event.fanout_status != data.FAILED or not data.reopen(event):
        raise Conflict(
            f"event fan-out is {event.fanout_status}; only a failed fan-out can be re-driven",
            "fanout_status",
            code="NOT_REDRIVABLE",
        )
    point = fanout_pages.resume_point(event.event_id)
    if point is None:  # its last page was recorded after all
        data.mark_done(event)
    else:
        page, cursor = point
        send_fanout(event.event_id, app_id, cursor=cursor, page=page)
    return get(app_id, event_id, now_ms)
