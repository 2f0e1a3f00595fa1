"""Task Run use cases for the API: direct runs, cancel, dead-letter replay."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from edgecron import clock, ids
from edgecron.config import get_settings
from edgecron.data import attempts as attempt_data
from edgecron.data import endpoints as endpoint_data
from edgecron.data import runs as data
from edgecron.data.paging import Page
from edgecron.data.queues import DeliveryMessage, send_deliveries
from edgecron.domain.attempts import Attempt
from edgecron.domain.task_runs import MAX_RUN_DELAY_SEC, TaskRun
from edgecron.domain.vocabulary import RunStatus, Source
from edgecron.domain.wake import wake_entry, wake_time
from edgecron.errors import Conflict, NotFound, ParamInvalid, PayloadTooLarge
from edgecron.schemas.common import MAX_PAYLOAD_BYTES
from edgecron.services import quota, usage
from edgecron.services.fires import settle

if TYPE_CHECKING:  # the API's request models: the functions other than the API never build them
    from edgecron.schemas.task_runs import DeadLetterFilter, TaskRunCreate


def check_payload(payload: Any, field: str = "payload") -> None:
    size = len(json.dumps(payload, separators=(",", ":")).encode())
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadTooLarge(f"{field} is {size} bytes; the maximum is {MAX_PAYLOAD_BYTES}", field)


def enqueue_plan(deliver_at_ms: int, now_ms: int) -> tuple[bool, int]:
    """(send now?, wake_at): runs due within the look-ahead are sent with DelaySeconds at once and
    woken again only if their message goes missing; later ones wait for the scan."""
    settings = get_settings()
    send_now = deliver_at_ms <= now_ms + settings.lookahead_ms
    return send_now, wake_time(deliver_at_ms, sent=send_now, redispatch_after_ms=settings.redispatch_after_ms)


def create_direct(app_id: str, req: TaskRunCreate, now: datetime, run_id: str | None = None) -> TaskRun:
    now_ms = clock.to_ms(now)
    if req.deliver_at is not None and req.delay_sec is not None:
        raise ParamInvalid("give either deliver_at or delay_sec, not both", "delay_sec")
    if req.deliver_at is not None and clock.to_ms(req.deliver_at) > now_ms + MAX_RUN_DELAY_SEC * 1000:
        raise ParamInvalid(f"deliver_at is more than {MAX_RUN_DELAY_SEC // 86_400} days ahead", "deliver_at")
    check_payload(req.payload)
    endpoint = endpoint_data.get(app_id, req.endpoint_id)
    if endpoint is None:
        raise NotFound(f"endpoint {req.endpoint_id} not found", "endpoint_id")
    if not endpoint.receives_runs:  # one disabled for failing takes runs: they wait as dead letters
        raise Conflict(f"endpoint {req.endpoint_id} is inactive", "endpoint_id")
    quota.check_quota(app_id, now_ms)
    deliver_at_ms = now_ms
    if req.deliver_at is not None:
        deliver_at_ms = max(now_ms, clock.to_ms(req.deliver_at))
    elif req.delay_sec:
        deliver_at_ms = now_ms + req.delay_sec * 1000
    send_now = enqueue_plan(deliver_at_ms, now_ms)[0]
    counted_by_check = send_now and not quota.has_quota(app_id)  # a quota reads the counter at once
    run = data.new_run(
        run_id=run_id or ids.new_id("run", now_ms),
        app_id=app_id,
        endpoint_id=endpoint.endpoint_id,
        source="direct",
        source_id=None,
        payload=req.payload,
        deliver_at_ms=deliver_at_ms,
        # due at once: the scan's check of recent runs covers a lost message; a delayed run keeps its
        # entry, so a lost message is found REDISPATCH_AFTER_SEC after its due time, not later
        wake_at_ms=wake_entry(
            deliver_at_ms,
            sent=send_now,
            checked_later=deliver_at_ms <= now_ms,
            redispatch_after_ms=get_settings().redispatch_after_ms,
        ),
        now_ms=now_ms,
        # sent now by an App without a quota: counted by the scan's check of recent runs, which
        # reads it anyway, with the check's conditional move past it; any other run is counted by
        # its own conditional put (data-model.md, Usage)
        counted_by_check=counted_by_check,
    )
    if counted_by_check:
        stored = data.put_new(run)
    else:
        stored = data.put_new_billed(run, usage.month_of(now_ms), "direct")
    if stored:
        usage.recorded()
    if not stored:  # an earlier request with this id stored it: answer for that run
        existing = data.get(app_id, run.run_id, consistent=True)
        if existing is None:
            raise NotFound(f"task run {run.run_id} not found", "id")
        return finish_direct(existing, now_ms)
    if send_now:
        send_deliveries([DeliveryMessage(run.run_id, app_id, (deliver_at_ms - now_ms) / 1000)])
    return run


def finish_direct(run: TaskRun, now_ms: int) -> TaskRun:
    """Answer for a direct run a create may have left half done: a run waiting without a `wake`
    entry (sent at its creation) gets its delivery message again, in case the create died before
    sending it (a duplicate message is harmless: one worker claims the run). A run with an entry
    is sent by the scan."""
    if run.status == RunStatus.PENDING and not run.has_wake_entry:
        delay = max(0, run.deliver_at - now_ms) / 1000
        send_deliveries([DeliveryMessage(run.run_id, run.app_id, delay)])
    return run


def recover_direct(app_id: str, run_id: str, now_ms: int) -> TaskRun | None:
    """The direct run an earlier create with this id stored (strongly consistent), finished."""
    run = data.get(app_id, run_id, consistent=True)
    return None if run is None else finish_direct(run, now_ms)


def find(app_id: str, run_id: str, now_ms: int) -> TaskRun | None:
    return data.get_for_app(app_id, run_id, now_ms)


def list_page(
    app_id: str,
    limit: int,
    cursor: dict[str, Any] | None,
    now_ms: int,
    *,
    status: RunStatus | None = None,
    endpoint_id: str | None = None,
    source: Source | None = None,
) -> Page[TaskRun]:
    if cursor is not None and not data.is_list_cursor(cursor):  # the App checked, not the position
        raise ParamInvalid("cursor is not valid", "cursor")
    return data.list_page(
        app_id, limit, cursor, now_ms, status=status, endpoint_id=endpoint_id, source=source
    )


def attempts_page(
    app_id: str, run_id: str, limit: int, cursor: dict[str, Any] | None, now_ms: int
) -> Page[Attempt]:
    """A run of the App's attempts, oldest first (404 for another App's run)."""
    run = get(app_id, run_id, now_ms)
    return attempt_data.list_page(run.app_id, run.run_id, limit, cursor)


def get(app_id: str, run_id: str, now_ms: int) -> TaskRun:
    run = data.get_for_app(app_id, run_id, now_ms)
    if run is None:
        raise NotFound(f"task run {run_id} not found", "id")
    return run


def cancel(app_id: str, run_id: str, now_ms: int) -> TaskRun:
    run = get(app_id, run_id, now_ms)
    cancelled = data.cancel(run, now_ms, "cancelled by the API")
    if cancelled is None:
        current = get(app_id, run_id, now_ms)
        raise Conflict(
            f"task run is {current.status}; only pending or retry_scheduled runs can be cancelled",
            "status",
            code="NOT_CANCELLABLE",
        )
    if cancelled.source == Source.SCHEDULE:
        settle.run_settled(cancelled, RunStatus.CANCELLED, now_ms)
    return cancelled


def replay(app_id: str, run_id: str, now_ms: int) -> TaskRun:
    run = get(app_id, run_id, now_ms)
    replayed = _replay(run, now_ms) if run.status == RunStatus.DEAD_LETTER else None
    if replayed is None:
        current = get(app_id, run_id, now_ms) if run.status == RunStatus.DEAD_LETTER else run
        raise Conflict(
            f"task run is {current.status}; only dead letters can be replayed",
            "status",
            code="NOT_REPLAYABLE",
        )
    return replayed


def _replay(
    run: TaskRun, now_ms: int, from_statuses: tuple[str, ...] = (RunStatus.DEAD_LETTER,)
) -> TaskRun | None:
    """A new attempt series for the run, its message sent; None if it is no longer in `from_statuses`."""
    _, wake_at = enqueue_plan(now_ms, now_ms)
    replayed = data.replay(run, now_ms, wake_at, from_statuses=from_statuses)
    if replayed is not None:
        send_deliveries([DeliveryMessage(run.run_id, run.app_id)])
    return replayed


@dataclass(frozen=True)
class BulkReplay:
    replayed: int
    skipped: int
    has_more: bool
    next_key: dict[str, Any] | None = None


BULK_PAGE = (
    1000  # index entries read per page of a bulk route (filtered-out ones count; a page is 1 MB at most)
)
BULK_WORK_MS = 5_000  # a bulk call stops starting pages after this long (see api.context.bulk_deadline)


def dead_letters(
    app_id: str, filters: DeadLetterFilter, limit: int, cursor: dict[str, Any] | None, now_ms: int
) -> Page[TaskRun]:
    return data.dead_letters_page(
        app_id,
        limit,
        cursor,
        now_ms,
        endpoint_id=filters.endpoint_id,
        since_ms=clock.to_ms(filters.since) if filters.since else None,
        until_ms=clock.to_ms(filters.until) if filters.until else None,
        error_kind=filters.error_kind,
    )


def _replay_pages(
    pages: Iterator[Page[tuple[TaskRun | None, dict[str, Any]]]],
    limit: int,
    deadline: float,
    now_ms: int,
    from_statuses: tuple[str, ...],
) -> tuple[int, int, dict[str, Any] | None, bool]:
    """Replay the runs of `pages` in order, each page's messages sent together, until `limit` runs
    were handled, the pages end, or `deadline` (`clock.monotonic()`) passes; (replayed, skipped,
    where to resume, whether more may remain). The deadline is checked before each run and each page
    read, so a call outlives it by one write or one read at most."""
    replayed = skipped = 0
    resume: dict[str, Any] | None = None
    _, wake_at = enqueue_plan(now_ms, now_ms)
    for page in pages:
        sent: list[TaskRun] = []
        stopped = False
        for run, key in page.items:
            if replayed + skipped + len(sent) >= limit or clock.monotonic() >= deadline:
                stopped = True
                break
            if run is not None and data.replay(run, now_ms, wake_at, from_statuses=from_statuses):
                sent.append(run)
            elif run is not None:
                skipped += 1
            resume = key
        if sent:
            send_deliveries([DeliveryMessage(run.run_id, run.app_id) for run in sent])
        replayed += len(sent)
        if stopped:
            return replayed, skipped, resume, True
        resume = page.last_key
        if resume is None:
            return replayed, skipped, None, False
        if replayed + skipped >= limit or clock.monotonic() >= deadline:
            return replayed, skipped, resume, True
    return replayed, skipped, resume, resume is not None


def replay_bulk(
    app_id: str, filters: DeadLetterFilter, now_ms: int, cursor: dict[str, Any] | None, deadline: float
) -> BulkReplay:
    """Replay up to `limit` matching dead letters, oldest first, reading at most a few index pages
    (stopping at `deadline`); call again with `next_key` while has_more is true."""
    pages = data.dead_letter_pages(
        app_id,
        cursor,
        BULK_PAGE,
        now_ms,
        endpoint_id=filters.endpoint_id,
        since_ms=clock.to_ms(filters.since) if filters.since else None,
        until_ms=clock.to_ms(filters.until) if filters.until else None,
        error_kind=filters.error_kind,
    )
    replayed, skipped, resume, more = _replay_pages(
        pages, filters.limit, deadline, now_ms, (RunStatus.DEAD_LETTER,)
    )
    return BulkReplay(replayed, skipped, more, resume if more else None)


RECOVER_MAX = 1000  # runs re-sent per call; call again while has_more


@dataclass(frozen=True)
class Recovered:
    recovered: int
    has_more: bool
    next_key: dict[str, Any] | None = None


def recover_partitions(app_id: str) -> tuple[str, ...]:
    """What a recover cursor of the App may name as its `dl_app_id`."""
    return (app_id, app_id + data.FAILED_PARTITION)


def recover(
    app_id: str,
    endpoint_id: str,
    since_ms: int,
    until_ms: int | None,
    now_ms: int,
    cursor: dict[str, Any] | None = None,
    deadline: float | None = None,
) -> Recovered:
    """Re-send every run of the Endpoint that ended failed or dead_letter in the window, each as a new
    attempt series (its history stays), up to RECOVER_MAX runs and until `deadline` per call; call
    again with `next_key` while has_more is true. A re-sent run is pending again, so a second call
    while it waits finds nothing new to send."""
    endpoint = endpoint_data.get(app_id, endpoint_id, consistent=True)
    if endpoint is None:
        raise NotFound(f"endpoint {endpoint_id} not found", "id")
    if not endpoint.active:
        raise Conflict(f"endpoint {endpoint_id} is inactive: enable it before recovering its runs", "id")
    if until_ms is not None and until_ms < since_ms:
        raise ParamInvalid("until must not be before since", "until")
    pages = data.ended_badly_pages(app_id, endpoint_id, since_ms, until_ms, now_ms, cursor, BULK_PAGE)
    stop = clock.monotonic() + BULK_WORK_MS / 1000 if deadline is None else deadline
    recovered, _, resume, more = _replay_pages(pages, RECOVER_MAX, stop, now_ms, data.RECOVERABLE)
    return Recovered(recovered, more, resume if more else None)
