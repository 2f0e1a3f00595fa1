"""The fan-out function's use case: one message = one page of the App's Endpoints, for an Event or
for a broadcast Fire (a schedule bound to every Endpoint of its App).

For page n (the Endpoints after `cursor`, in key order, read by app_id so no other App is seen):
(a) every matching Endpoint gets a Task Run with a deterministic id, created with a conditional put
(an Event matches ACTIVE Endpoints whose filter_events match its name; a Fire every ACTIVE one),
(b) the page is recorded — one small item in FanoutPagesTable written in one transaction with its
owner's counters, conditional on the page being new (and, for a Fire, on the Fire being open and its
schedule ACTIVE),
(c) its runs are enqueued, (d) if Endpoints remain, the message of page n+1 is sent and the page
marked continued.

Only the delivery that recorded the page (or a redelivery finding it recorded but not continued)
goes on to (c) and (d); a page found continued, or recorded by a concurrent delivery, stops there.
So a page that cannot be recorded sends nothing onwards, and a repeated message never forks the
chain: the only repeat is a crash between sending page n+1 and marking page n, and page n+1's own
record absorbs it. A message SQS gives up on lands in FanoutDLQ (handle_dead_letter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, assert_never

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import events as event_data
from edgecron.data import fanout_pages
from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.queues import (
    MAX_DELAY_SEC,
    DeliveryMessage,
    send_deliveries,
    send_fanout,
    send_fire_fanout,
    send_schedule_dispatch,
)
from edgecron.domain import run_states as st
from edgecron.domain.endpoints import Subscriber
from edgecron.domain.event_filters import matches_any
from edgecron.domain.events import Event
from edgecron.domain.expiry import is_alive
from edgecron.domain.fanout_pages import FanoutPage
from edgecron.domain.fires import Fire
from edgecron.domain.schedules import Schedule
from edgecron.domain.vocabulary import FireStatus
from edgecron.observability import logger
from edgecron.schemas.messages import EventPage, FanoutBody, FireGate, FirePage, ScheduleWindow
from edgecron.services import usage
from edgecron.services.events import run_id_for
from edgecron.services.fires import admission, dispatch, settle
from edgecron.services.task_runs import enqueue_plan

PAGE_SIZE = 100  # an Event's page: matched runs are created and enqueued right away
FIRE_PAGE_SIZE = 1_000  # a broadcast Fire's page: fewer hops between the scan and the fire time
NO_ENDPOINTS = "no active endpoints at fire time"
STOPPED = "schedule paused or deleted while its fire was fanned out"
WINDOW_STEP_MS = 10_000  # a new schedule's window: fire times dispatched per message of its chain


@dataclass(frozen=True)
class FanoutReport:
    outcome: str  # page | done | skipped | stopped
    matched: int = 0
    created: int = 0


def delivery_body(event: Event) -> dict[str, Any]:
    """What each Endpoint receives: the Standard Webhooks payload envelope, so a receiver of
    several event types (`*`, `invoice.*`) can tell them apart."""
    return {
        "type": event.name,
        "timestamp": clock.iso_ms(event.created_at),
        "event_id": event.event_id,
        "data": event.payload,
    }


def fan_out(message: FanoutBody, page_size: int | None = None) -> FanoutReport:
    """Process one fan-out message. Raises only on infrastructure errors (SQS redelivers it)."""
    match message:
        case EventPage():
            return _event_page(message, page_size or PAGE_SIZE)
        case FirePage():
            return _fire_page(message, page_size or FIRE_PAGE_SIZE)
        case ScheduleWindow():
            return _schedule_window(message.app_id, message.schedule_id, message.dispatch_until)
        case FireGate():
            return FanoutReport(admission.admit_due(message.schedule_id, message.fire_at, message.app_id))
        case _:
            assert_never(message)


def _schedule_window(app_id: str, schedule_id: str, until_ms: int) -> FanoutReport:
    """Dispatch the next WINDOW_STEP_MS of a new schedule's fires up to `until_ms` (never past the
    look-ahead), then hand the rest to the next message of the chain: the windows of schedules
    created together advance a step each in turn, so no schedule's near fires wait behind another's
    whole window. A paused, deleted or already dispatched schedule ends the chain."""
    now = clock.now()
    schedule = schedule_data.get_timed(app_id, schedule_id, consistent=True)
    if schedule is None or not schedule.is_active or schedule.next_fire_at is None:
        return FanoutReport("skipped")
    horizon = min(until_ms, clock.to_ms(now) + get_settings().lookahead_ms)
    step = min(horizon, schedule.next_fire_at + WINDOW_STEP_MS - 1)
    done = dispatch.dispatch_due(schedule, now, step)
    handled, schedule = done.handled, done.schedule
    if not handled:
        return FanoutReport("skipped")  # another writer moved the schedule: the scan goes on from there
    if schedule.is_active and schedule.next_fire_at is not None and schedule.next_fire_at <= horizon:
        send_schedule_dispatch(schedule_id, app_id, until_ms)
        return FanoutReport("page", handled, handled)
    return FanoutReport("done", handled, handled)


def _owner(message: EventPage | FirePage) -> str:
    """The fan-out chain a page belongs to: its Event, or its broadcast Fire."""
    if isinstance(message, EventPage):
        return message.event_id
    return fanout_pages.fire_owner(message.schedule_id, message.fire_at)


def _page_number(message: EventPage | FirePage) -> int | None:
    if message.page is not None:
        return message.page
    last = fanout_pages.last(_owner(message))  # a message of an earlier version: find its page
    if last is not None and last.last_endpoint_id == message.cursor:
        return int(last.page) + 1
    return None


def _event_page(message: EventPage, page_size: int) -> FanoutReport:
    event_id = message.event_id
    now_ms = clock.to_ms(clock.now())
    event = event_data.get(message.app_id, event_id, consistent=True)
    if event is None or not is_alive(event.expires_at, now_ms):
        logger.warning("fan-out for a missing event dropped", extra={"event_id": event_id})
        return FanoutReport("skipped")
    if event.fanout_status in (event_data.DONE, event_data.FAILED):
        return FanoutReport("skipped")  # a duplicate after the chain finished, or parked until a re-drive
    n = _page_number(message)
    if n is None:
        logger.warning("fan-out message for an unknown page dropped", extra={"event_id": event_id})
        return FanoutReport("skipped")
    page = fanout_pages.get(event_id, n)
    created = 0
    if page is None:
        endpoints, more = event_data.endpoints_page(event.app_id, message.cursor, page_size)
        matched = [
            ep.endpoint_id
            for ep in endpoints
            if ep.receives_runs and matches_any(ep.filter_events, event.name)
        ]
        created = _create_event_runs(event, matched, now_ms)
        page = _new_page(event_id, n, event.app_id, message.cursor, endpoints, matched, more, now_ms)
        outcome = event_data.record_page(event, page)
        if outcome != "recorded":
            return FanoutReport("skipped", len(matched), created)  # gone, or another delivery won
    elif page.continued:
        return FanoutReport("skipped", len(page.endpoint_ids))  # a repeat of a finished page
    ids = list(page.endpoint_ids)
    failed = send_deliveries([DeliveryMessage(run_id_for(event_id, ep), event.app_id) for ep in ids])
    if failed:
        logger.warning("event runs not enqueued; redispatched by the scan", extra={"count": len(failed)})
    if page.more:
        send_fanout(event_id, event.app_id, cursor=page.last_endpoint_id, page=n + 1)
        fanout_pages.mark_continued(page)
    return FanoutReport("page" if page.more else "done", len(ids), created)


def _new_page(
    owner_id: str,
    n: int,
    app_id: str,
    after: str | None,
    endpoints: list[Subscriber],
    reached: list[str],
    more: bool,
    now_ms: int,
) -> FanoutPage:
    last_id = endpoints[-1].endpoint_id if endpoints else after
    return fanout_pages.new_page(owner_id, n, app_id, after, last_id, reached, more, now_ms)


def _create_event_runs(event: Event, endpoint_ids: list[str], now_ms: int) -> int:
    """One pending run per Endpoint, due now and enqueued right away, so without a `wake` entry (the
    scan's check of recent runs finds one whose message is lost); returns how many did not exist yet."""
    body = delivery_body(event)
    created = 0
    for endpoint_id in endpoint_ids:
        run = run_data.new_run(
            run_id=run_id_for(event.event_id, endpoint_id),
            app_id=event.app_id,
            endpoint_id=endpoint_id,
            source="event",
            source_id=event.event_id,
            payload=body,
            deliver_at_ms=now_ms,
            wake_at_ms=None,
            now_ms=now_ms,
        )
        if run_data.put_new(run):
            created += 1
    return created


def _fire_page(message: FirePage, page_size: int) -> FanoutReport:
    now_ms = clock.to_ms(clock.now())
    schedule_id, fire_at = message.schedule_id, message.fire_at
    fire = fire_data.get(schedule_id, fire_at)
    if fire is None or fire.app_id != message.app_id or not fire.is_open:
        return FanoutReport("skipped")  # settled (cancelled by a pause, failed) or unknown
    if fire.waits_for_admission:
        return FanoutReport("skipped")  # its overlap policy has not let it start
    schedule = schedule_data.get(fire.app_id, schedule_id, consistent=True)
    reason = _withheld(schedule, fire)
    if schedule is None or reason is not None:
        if _defer_until_due(message, fire, schedule, now_ms):
            return FanoutReport("deferred")
        stop_fire(fire, [], now_ms, reason or STOPPED)
        return FanoutReport("stopped")
    n = _page_number(message)
    if n is None:
        return FanoutReport("skipped")
    owner = fanout_pages.fire_owner(schedule_id, fire_at)
    page = fanout_pages.get(owner, n)
    created = 0
    if page is None:
        endpoints, more = event_data.endpoints_page(fire.app_id, message.cursor, page_size)
        targets = [ep.endpoint_id for ep in endpoints if ep.receives_runs]
        created = _create_fire_runs(schedule, fire, targets, now_ms)
        page = _new_page(owner, n, fire.app_id, message.cursor, endpoints, targets, more, now_ms)
        outcome = fire_data.record_page(fire, page, now_ms)
        if outcome == "stopped" and _defer_until_due(
            message, fire, schedule_data.get(fire.app_id, schedule_id, consistent=True), now_ms
        ):
            return FanoutReport("deferred", len(targets), created)
        if outcome == "stopped":
            stop_fire(fire, [fire_data.run_id(schedule_id, fire_at, ep) for ep in targets], now_ms)
            return FanoutReport("stopped", len(targets), created)
        if outcome != "recorded":
            return FanoutReport("skipped", len(targets), created)
        if n == 0 and fire.billed_with_runs:
            usage.recorded()  # the first page's record billed the fire
    elif page.continued:
        return FanoutReport("skipped", len(page.endpoint_ids))
    ids = list(page.endpoint_ids)
    due = fire.due_ms
    send_now, _ = enqueue_plan(due, now_ms)
    if send_now and ids:
        messages = [
            DeliveryMessage(fire_data.run_id(schedule_id, fire_at, ep), fire.app_id, due_ms=due) for ep in ids
        ]
        failed = send_deliveries(messages)
        if failed:
            logger.warning("fire runs not enqueued; redispatched by the scan", extra={"count": len(failed)})
    if page.more:
        send_fire_fanout(schedule_id, fire_at, fire.app_id, cursor=page.last_endpoint_id, page=n + 1)
        fanout_pages.mark_continued(page)
        return FanoutReport("page", len(ids), created)
    _after_last_page(schedule_id, fire_at, ids, now_ms)
    return FanoutReport("done", len(ids), created)


def _withheld(schedule: Schedule | None, fire: Fire) -> str | None:
    """Why a broadcast Fire's runs must not be created now, or None: as the worker decides for a run
    (settle.withheld), with the Fire's dispatch time. An ENDED schedule's last fires go on."""
    if schedule is None or schedule.paused_at(fire.fire_at):
        return STOPPED
    if not fire.manual and schedule.withholds(fire.fire_at, fire.created_at):
        return settle.EDITED
    return None


def _defer_until_due(message: FirePage, fire: Fire, schedule: Schedule | None, now_ms: int) -> bool:
    """A page of a broadcast Fire found its schedule paused, or re-timed without its fire time,
    before the fire's due time: the page waits for that time (the message comes back then), since a
    resume or an edit back before it means the fire is delivered. A deleted schedule, a settled Fire
    or a due time that came stop it (False)."""
    if schedule is None or fire.due_ms <= now_ms:
        return False
    current = fire_data.get(fire.schedule_id, fire.fire_at)
    if current is None or not current.is_open:
        return False
    delay_sec = min(MAX_DELAY_SEC, math.ceil((fire.due_ms - now_ms) / 1000))
    send_fire_fanout(fire.schedule_id, fire.fire_at, fire.app_id, message.cursor, message.page, delay_sec)
    return True


def _create_fire_runs(schedule: Schedule, fire: Fire, endpoint_ids: list[str], now_ms: int) -> int:
    fire_at, due = fire.fire_at, fire.due_ms
    _, wake_at = dispatch.run_plan(fire, now_ms)
    return sum(
        dispatch.put_fire_run(schedule, fire_at, ep, wake_at, now_ms, due_ms=due) for ep in endpoint_ids
    )


def _after_last_page(schedule_id: str, fire_at: int, last_ids: list[str], now_ms: int) -> None:
    """The Fire is fully dispatched. Runs that are still to finish settle it; if the last page
    created none, every earlier run may be final already, so look now."""
    if last_ids:
        return
    fire = fire_data.get(schedule_id, fire_at)
    if fire is None or not fire.is_open:
        return
    if not fire.run_count:
        settle.settle_as(fire, FireStatus.COMPLETED, now_ms, NO_ENDPOINTS)
        return
    settle.settle_if_done(fire, now_ms)


def stop_fire(fire: Fire, unrecorded_run_ids: list[str], now_ms: int, reason: str = STOPPED) -> None:
    """The schedule was paused or deleted while its Fire was fanned out: no run of it is delivered.
    Runs of recorded pages were cancelled by the pause (or are here); runs of a page that could not
    be recorded are cancelled here; the Fire settles CANCELLED."""
    recorded = [rid for page in fire_data.run_id_pages(fire) for rid in page]
    for run in run_data.get_many(fire.app_id, recorded + unrecorded_run_ids):
        if run.status in st.CANCELLABLE:
            run_data.cancel(run, now_ms, reason)
    current = fire_data.get(fire.schedule_id, fire.fire_at)
    if current is not None and current.is_open:
        settle.settle_as(current, FireStatus.CANCELLED, now_ms, reason)


def handle_dead_letter(body: FanoutBody | str, receive_count: int) -> str:
    """A fan-out message SQS gave up on: its Event is marked failed with the reason (visible in
    GET /v1/events/{id}, resumed by POST /v1/events/{id}/redrive); its Fire settles FAILED.
    `body` is the text of a message that does not parse.
    Returns what happened: event_failed | fire_failed | already_final | unknown | unparseable."""
    if isinstance(body, str):
        logger.error("unparseable message in the fan-out DLQ", extra={"body_prefix": body[:200]})
        return "unparseable"
    message = body
    now_ms = clock.to_ms(clock.now())
    page = (
        str(message.page) if isinstance(message, EventPage | FirePage) and message.page is not None else "?"
    )
    failures = max(1, receive_count - 1)  # the count includes this consumer's own receive
    reason = (
        f"fan-out stopped at page {page}: it failed {failures} times "
        "(see the FanoutFunction logs); fix the cause, then re-drive"
    )
    if isinstance(message, EventPage):
        event = event_data.get(message.app_id, message.event_id, consistent=True)
        if event is None:
            logger.warning("fan-out DLQ message for an unknown event", extra={"event_id": message.event_id})
            return "unknown"
        if not event_data.mark_failed(event.app_id, event.event_id, reason):
            return "already_final"
        logger.error("event fan-out failed", extra={"event_id": event.event_id, "reason": reason})
        return "event_failed"
    if isinstance(message, ScheduleWindow):
        return "unknown"  # the due walk dispatches the rest of the window in any case
    fire = fire_data.get(message.schedule_id, message.fire_at)
    if fire is None or fire.app_id != message.app_id:
        return "unknown"
    if not fire.is_open or not settle.settle_as(fire, FireStatus.FAILED, now_ms, reason):
        return "already_final"
    logger.error("fire fan-out failed", extra={"schedule_id": fire.schedule_id, "reason": reason})
    return "fire_failed"
