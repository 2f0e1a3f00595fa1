"""Task Runs: every state change is a conditional write, so two workers, a cancel and a scan never
both win. The `wake` index (docs/data-model.md) tells the scan when to look at a run again; a run
whose message is sent when it is created has no entry until the scan's check of recent runs
(`created_between`, `watch`) finds it still unfinished.

The table is keyed by App partition (one of RUN_PARTITIONS per App, by a hash of the run id) and
time-ordered run id, so an App's runs are read by merging the queries of its partitions (list_page,
created_between); the `wake` index projects keys only, so a claim or a result never
rewrites its entry, and wake_due fetches the items by key."""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data import fanout_pages, run_checks, usage
from edgecron.data.attempts import as_record
from edgecron.data.conditional import error_code, save_if, update_if
from edgecron.data.expiry import run_expires_at_s
from edgecron.data.keys import (
    RUN_PARTITIONS,
    alive,
    app_run_partitions,
    items_of_entries,
    run_partition,
    time_key,
    time_window,
)
from edgecron.data.models import TaskRunModel
from edgecron.data.paging import Page, query_page, query_pages
from edgecron.domain import run_states as st
from edgecron.domain.attempts import Attempt
from edgecron.domain.expiry import is_alive
from edgecron.domain.run_listing import BATCH_GET_MAX, MAX_KEYS_PER_PAGE, RunFilter, collect_page
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import RunStatus, Source
from edgecron.domain.wake import wake_time
from edgecron.errors import StoredItemUnreadable
from edgecron.observability import STORED_ITEMS_UNREADABLE, count, logger

M = TaskRunModel


KEY_SETTLE_MS = 60_000  # a run whose id is older than this when it is created gets a `wake` entry


def created_key(created_ms: int, run_id: str) -> str:
    return f"{time_key(created_ms)}#{run_id}"


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def to_entity(row: TaskRunModel) -> TaskRun:
    """The run an item holds; StoredItemUnreadable when it does not map (an attribute missing, or a
    value this release does not know)."""
    try:
        return _mapped(row)
    except (TypeError, ValueError) as exc:
        raise StoredItemUnreadable("task run", row.run_id, row.app_id or "", str(exc)) from exc


def _mapped(row: TaskRunModel) -> TaskRun:
    return TaskRun(
        run_id=row.run_id,
        app_id=row.app_id,
        endpoint_id=row.endpoint_id,
        source=Source(row.source),
        status=RunStatus(row.status),
        deliver_at=int(row.deliver_at),
        created_at=int(row.created_at),
        updated_at=int(row.updated_at),
        source_id=row.source_id,
        fire_at=_opt_int(row.fire_at),
        payload=row.payload,
        retry_policy_id=row.retry_policy_id,
        attempt_count=int(row.attempt_count or 0),
        total_attempts=int(row.total_attempts or 0),
        series=int(row.series or 1),
        next_retry_at=_opt_int(row.next_retry_at),
        wake_at=_opt_int(row.wake_at),
        has_wake_entry=row.wake_shard is not None,
        enqueued_at=_opt_int(row.enqueued_at),
        claim_token=row.claim_token,
        claim_expires_at=_opt_int(row.claim_expires_at),
        claimed_from=RunStatus(row.claimed_from) if row.claimed_from else None,
        last_error=row.last_error,
        last_error_kind=row.last_error_kind,
        last_status_code=_opt_int(row.last_status_code),
        finished_at=_opt_int(row.finished_at),
        expires_at=_opt_int(row.expires_at),
        uncounted=bool(row.uncounted),
        counted_by_check=bool(row.counted_by_check),
        settles_fire=bool(row.settles_fire),
        flow_held=bool(row.flow_held),
        flow_slot=_opt_int(row.flow_slot),
    )


Unreadable = Callable[[StoredItemUnreadable], None]  # told of a stored run that does not map to a TaskRun


def left_out(error: StoredItemUnreadable) -> None:
    """What a list or batch read does with a run it cannot read: leave it out, and say so."""
    logger.warning(
        "stored run left out: this release cannot read it",
        extra={"run_id": error.item_id, "app_id": error.app_id, "reason": error.reason},
    )
    count(STORED_ITEMS_UNREADABLE)


def _entities(rows: Iterable[TaskRunModel], unreadable: Unreadable = left_out) -> Iterator[TaskRun]:
    """The rows as entities; a row that does not map is left out and told to `unreadable`, so one
    bad item never stops a walk, a list or a batch read."""
    for row in rows:
        try:
            yield to_entity(row)
        except StoredItemUnreadable as error:
            unreadable(error)


def to_row(run: TaskRun) -> TaskRunModel:
    """The whole item of a new run, with its partition and the `wake` entry its wake time calls for."""
    return M(
        run_partition(run.app_id, run.run_id),
        run.run_id,
        app_id=run.app_id,
        endpoint_id=run.endpoint_id,
        source=str(run.source),
        source_id=run.source_id,
        fire_at=run.fire_at,
        payload=run.payload,
        retry_policy_id=run.retry_policy_id,
        status=str(run.status),
        attempt_count=run.attempt_count,
        total_attempts=run.total_attempts,
        series=run.series,
        deliver_at=run.deliver_at,
        next_retry_at=run.next_retry_at,
        wake_shard=_shard(run.run_id) if run.has_wake_entry else None,
        wake_at=run.wake_at if run.has_wake_entry else None,
        enqueued_at=run.enqueued_at,
        last_error=run.last_error,
        last_error_kind=run.last_error_kind,
        last_status_code=run.last_status_code,
        created_at=run.created_at,
        updated_at=run.updated_at,
        finished_at=run.finished_at,
        expires_at=run.expires_at,
        uncounted=True if run.uncounted else None,
        counted_by_check=True if run.counted_by_check else None,
        settles_fire=True if run.settles_fire else None,
        flow_held=True if run.flow_held else None,
        flow_slot=run.flow_slot,
    )


def _key(app_id: str, run_id: str) -> TaskRunModel:
    return M(run_partition(app_id, run_id), run_id, app_id=app_id)


def new_run(
    *,
    run_id: str,
    app_id: str,
    endpoint_id: str,
    source: str,
    source_id: str | None,
    payload: Any,
    deliver_at_ms: int,
    wake_at_ms: int | None,
    now_ms: int,
    fire_at: int | None = None,
    retry_policy_id: str | None = None,
    uncounted: bool = False,
    counted_by_check: bool = False,
    settles_fire: bool = False,
) -> TaskRun:
    """A pending run; `wake_at_ms` None for a run whose message is sent now (no `wake` entry: the
    scan's check of recent runs finds it if the message is lost); `uncounted` for a billable run its
    worker counts, `counted_by_check` for one the scan's check of recent runs counts (data/usage.py)."""
    if wake_at_ms is None and (ids.ms_of(run_id) or 0) < now_ms - KEY_SETTLE_MS:
        # its id sorts before the runs the scan's check of recent runs may already have passed
        wake_at_ms = wake_time(
            max(deliver_at_ms, now_ms), sent=True, redispatch_after_ms=get_settings().redispatch_after_ms
        )
    return TaskRun(
        run_id=run_id,
        app_id=app_id,
        endpoint_id=endpoint_id,
        source=Source(source),
        source_id=source_id,
        fire_at=fire_at,
        payload=payload,
        retry_policy_id=retry_policy_id,
        status=RunStatus.PENDING,
        deliver_at=deliver_at_ms,
        has_wake_entry=wake_at_ms is not None,
        wake_at=wake_at_ms,
        created_at=now_ms,
        updated_at=now_ms,
        expires_at=run_expires_at_s(now_ms, deliver_at_ms),
        uncounted=uncounted,
        counted_by_check=counted_by_check,
        settles_fire=settles_fire,
    )


def _usage_key(run: TaskRun) -> usage.Key:
    return run.app_id, usage.month_of(run.created_at), str(run.source)


def _counted(run: TaskRun) -> list[Any]:
    """Before a worker's write that clears a run's mark: its trigger goes into the counter first."""
    if not run.uncounted:
        return []
    usage.count_before_clearing(run.run_id, _usage_key(run))
    return [M.uncounted.remove()]


def _shard(run_id: str) -> str:
    return ids.shard_of(run_id, get_settings().shards)


def new_cancelled(
    *, run_id: str, app_id: str, endpoint_id: str, schedule_id: str, fire_at: int, now_ms: int, reason: str
) -> TaskRun:
    """A schedule run its dispatch never created, to be recorded cancelled (with a conditional put,
    unless it exists): a dispatch still under way then cannot create it afterwards, so it is never
    sent (services/fires/billing.py puts it)."""
    run = new_run(
        run_id=run_id,
        app_id=app_id,
        endpoint_id=endpoint_id,
        source=Source.SCHEDULE,
        source_id=schedule_id,
        payload=None,
        deliver_at_ms=fire_at,
        wake_at_ms=fire_at,
        now_ms=now_ms,
        fire_at=fire_at,
    )
    return replace(
        run,
        status=RunStatus.CANCELLED,
        has_wake_entry=False,
        wake_at=None,
        finished_at=now_ms,
        last_error=reason,
    )


def put_new(run: TaskRun) -> bool:
    """Create the run unless it exists (deterministic ids make a second create a no-op)."""
    _cover(run)
    return save_if(to_row(run), M.run_id.does_not_exist())


def _cover(run: TaskRun) -> None:
    # only the check finds it if lost, or the check counts it
    if (not run.has_wake_entry and run.status not in st.TERMINAL) or run.counted_by_check:
        # the check walks runs by the time their ids sort by: a schedule run's is its fire time
        run_checks.cover(run.app_id, max(run.created_at, ids.ms_of(run.run_id) or 0))


def put_new_billed(run: TaskRun, month: str, kind: str) -> bool:
    """Create the run unless it exists and count it as one billable trigger of `month`, in one
    transaction: the count is the run's own conditional put, done once or not at all (a put
    repeated after a lost answer counts nothing). False: the run existed (and was counted)."""
    _cover(run)
    try:
        with fanout_pages.transaction() as tx:
            tx.save(to_row(run), condition=M.run_id.does_not_exist())
            tx.update(*usage.counted(run.app_id, month, kind))
    except TransactWriteError as exc:
        if error_code(exc) != "TransactionCanceledException":
            raise
        reasons = [fanout_pages.reason_code(reason) for reason in exc.cancellation_reasons]
        if reasons and reasons[0] == "ConditionalCheckFailed":
            return False
        raise
    return True


def _update_at(app_id: str, run_id: str, actions: list[Any], condition: Any) -> TaskRun | None:
    """A conditional update: the run as stored after it, or None when the condition failed."""
    item = _key(app_id, run_id)
    return to_entity(item) if update_if(item, actions, condition) else None


def _update(run: TaskRun, actions: list[Any], condition: Any) -> TaskRun | None:
    return _update_at(run.app_id, run.run_id, actions, condition)


def get(app_id: str, run_id: str, *, consistent: bool = False) -> TaskRun | None:
    """The run `run_id` of this App: every reader knows the App (a message carries it, an API key
    gives it), and another App's run is indistinguishable from none."""
    if not app_id or not run_id:  # no key names it (DynamoDB refuses an empty key)
        return None
    try:
        return to_entity(M.get(run_partition(app_id, run_id), run_id, consistent_read=consistent))
    except DoesNotExist:
        return None


def get_for_app(app_id: str, run_id: str, now_ms: int) -> TaskRun | None:
    """A run of this App that has not expired; another App's run is indistinguishable from none."""
    run = get(app_id, run_id)
    if run is None or not is_alive(run.expires_at, now_ms):
        return None
    return run


def claim(app_id: str, run_id: str, now_ms: int, early_ms: int = 1_000) -> TaskRun | None:
    """Take a due waiting run (or one whose previous claim expired) for one attempt; None if another
    worker has it, it is finished or cancelled, or it is not due yet.

    The claim leaves `wake_at` alone (moving an index key costs two index writes): an enqueued run
    wakes at its due time + REDISPATCH_AFTER_SEC, after a claim taken on time has expired, and the
    scan releases the claim then if the worker died. A claim still valid when the run wakes is looked
    at again by the next scans, or at its expiry if that is beyond the scan's window
    (wake_at_claim_expiry). A message naming another App claims nothing."""
    if not app_id or not run_id:
        return None
    claim_ms = get_settings().claim_sec * 1000
    waiting_and_due = M.status.is_in(*st.WAITING) & (M.deliver_at <= now_ms + early_ms)
    expired = (M.status == RunStatus.RUNNING) & (M.claim_expires_at < now_ms)
    run = _update_at(
        app_id,
        run_id,
        [
            # first: DynamoDB reads the old status whatever the order, moto in the order given.
            # "running" means a worker died holding the run, and its attempt was never recorded
            M.claimed_from.set(M.status),
            M.status.set(RunStatus.RUNNING),
            M.claim_token.set(uuid.uuid4().hex),
            M.claim_expires_at.set(now_ms + claim_ms),
            M.attempt_count.add(1),
            M.total_attempts.add(1),
            M.updated_at.set(now_ms),
            M.expires_at.set(run_expires_at_s(now_ms)),
        ],
        M.run_id.exists() & (waiting_and_due | expired),
    )
    if run is None:
        return None
    if run.uncounted:  # also when taking over a dead worker's claim: its count may never have landed
        usage.claimed(run.run_id, _usage_key(run))
    return run


def _owned(run: TaskRun) -> Any:
    return (M.status == RunStatus.RUNNING) & (M.claim_token == run.claim_token)


def _terminal_actions(status: str, now_ms: int) -> list[Any]:
    return [
        M.status.set(status),
        M.finished_at.set(now_ms),
        M.updated_at.set(now_ms),
        M.wake_shard.remove(),
        M.wake_at.remove(),
        M.claim_token.remove(),
        M.claim_expires_at.remove(),
        M.claimed_from.remove(),
        M.next_retry_at.remove(),
        M.expires_at.set(run_expires_at_s(now_ms)),
    ]


def _result_actions(status_code: int | None, error: str | None, error_kind: str | None) -> list[Any]:
    return [
        M.last_status_code.set(status_code) if status_code is not None else M.last_status_code.remove(),
        M.last_error.set(error) if error else M.last_error.remove(),
        M.last_error_kind.set(error_kind) if error_kind else M.last_error_kind.remove(),
    ]


def finish(
    run: TaskRun,
    status: str,
    now_ms: int,
    *,
    status_code: int | None = None,
    error: str | None = None,
    error_kind: str | None = None,
    first_attempt: Attempt | None = None,
) -> TaskRun | None:
    """End the claimed run: success, failed or dead_letter (with its first Attempt, if given); the
    run as it ended, or None if it was no longer this worker's."""
    actions = _terminal_actions(status, now_ms) + _result_actions(status_code, error, error_kind)
    if first_attempt is not None:
        actions.append(M.first_attempt.set(as_record(first_attempt)))
    actions += _counted(run)
    if status in RECOVERABLE:
        actions += _ended_badly_keys(run, status, now_ms)
    return _update(run, actions, _owned(run))


RECOVERABLE = (RunStatus.DEAD_LETTER, RunStatus.FAILED)
FAILED_PARTITION = "#failed"  # failed runs share the dead_letters index under "<app_id>#failed"


def _ended_badly_keys(run: TaskRun, status: str, now_ms: int) -> list[Any]:
    """The `dead_letters` index entry of a run that ended badly: dead letters under the App's id (what
    GET /v1/dead-letters lists), failed runs under the App's id + FAILED_PARTITION, both keyed by
    when they ended, so an Endpoint's recover finds both kinds in a time window."""
    partition = run.app_id if status == RunStatus.DEAD_LETTER else run.app_id + FAILED_PARTITION
    return [M.dl_app_id.set(partition), M.dead_key.set(created_key(now_ms, run.run_id))]


def schedule_retry(
    run: TaskRun,
    due_ms: int,
    wake_at_ms: int | None,
    now_ms: int,
    *,
    status_code: int | None,
    error: str | None,
    error_kind: str | None,
    first_attempt: Attempt | None = None,
) -> TaskRun | None:
    """Store the retry (status, due time, wake time) before any message announces it, with the
    run's first Attempt if given. `wake_at_ms` None: a run without a `wake` entry keeps none (the
    scan's check of recent runs is still to read it)."""
    wake: list[Any] = (
        [] if wake_at_ms is None else [M.wake_shard.set(_shard(run.run_id)), M.wake_at.set(wake_at_ms)]
    )
    actions = [
        M.status.set(RunStatus.RETRY_SCHEDULED),
        M.next_retry_at.set(due_ms),
        M.deliver_at.set(due_ms),
        *wake,  # a run sent at creation has no entry yet
        M.claim_token.remove(),
        M.claim_expires_at.remove(),
        M.updated_at.set(now_ms),
        M.expires_at.set(run_expires_at_s(now_ms, due_ms)),
        *_result_actions(status_code, error, error_kind),
    ]
    if first_attempt is not None:
        actions.append(M.first_attempt.set(as_record(first_attempt)))
    actions += _counted(run)
    return _update(run, actions, _owned(run))


def release_for_flow(
    run: TaskRun, due_ms: int, wake_at_ms: int | None, now_ms: int, *, slot_ms: int | None
) -> TaskRun | None:
    """Flow control holds the claimed run back until `due_ms`: the claim is given up as if it had
    never been taken (no attempt: the counts it added are taken back), keeping the rate slot it was
    granted (`slot_ms`; None: it takes one when it comes back). `wake_at_ms` gives it a `wake` entry
    (a wait past the queue's delay range); None leaves the entry it has, or its absence (a run sent
    at its creation is looked after by the check of recent runs), so a short wait moves no index key."""
    waiting = RunStatus.PENDING if run.claimed_from == RunStatus.PENDING else RunStatus.RETRY_SCHEDULED
    actions = [
        M.status.set(waiting),
        M.deliver_at.set(due_ms),
        M.attempt_count.add(-1),
        M.total_attempts.add(-1),
        M.claim_token.remove(),
        M.claim_expires_at.remove(),
        M.claimed_from.remove(),
        M.updated_at.set(now_ms),
        M.expires_at.set(run_expires_at_s(now_ms, due_ms)),
        M.flow_held.set(True),
        M.flow_slot.set(slot_ms) if slot_ms is not None else M.flow_slot.remove(),
    ]
    if wake_at_ms is not None:
        actions += [M.wake_shard.set(_shard(run.run_id)), M.wake_at.set(wake_at_ms)]
    if waiting == RunStatus.RETRY_SCHEDULED:
        actions.append(M.next_retry_at.set(due_ms))
    actions += _counted(run)
    return _update_at(run.app_id, run.run_id, actions, _owned(run))


def _ending_uncounted(run: TaskRun, actions: list[Any], condition: Any) -> TaskRun | None:
    """End a run outside a worker (a cancel, a poison message). While it still carries its mark, the
    write clears it on that condition and the trigger is added after (a crash in between loses the
    count of a run never delivered, never double-counts one); a run counted meanwhile ends as any."""
    if run.uncounted:
        ended = _update(run, [*actions, M.uncounted.remove()], condition & M.uncounted.exists())
        if ended is not None:
            usage.add(*_usage_key(run))
            return ended
        condition &= M.uncounted.does_not_exist()
    return _update(run, actions, condition)


def cancel(run: TaskRun, now_ms: int, reason: str) -> TaskRun | None:
    actions = [
        *_terminal_actions(RunStatus.CANCELLED, now_ms),
        M.last_error.set(reason),
        M.last_error_kind.remove(),
    ]
    return _ending_uncounted(run, actions, M.status.is_in(*st.CANCELLABLE))


def _unstarted() -> Any:
    return (M.status == RunStatus.PENDING) & (M.total_attempts == 0)


def cancel_unstarted(run: TaskRun, now_ms: int, reason: str) -> TaskRun | None:
    """Cancel a run no worker has ever taken; False if one claimed it meanwhile (its outcome stands)."""
    actions = [
        *_terminal_actions(RunStatus.CANCELLED, now_ms),
        M.last_error.set(reason),
        M.last_error_kind.remove(),
    ]
    return _update(run, actions, _unstarted())


def wake_later(run: TaskRun, wake_at_ms: int) -> TaskRun | None:
    """A run whose message may still be queued behind a backlog: look at it again at `wake_at_ms`."""
    return _update(run, [M.wake_at.set(wake_at_ms)], _unstarted() & (M.wake_at == run.wake_at))


def mark_enqueued(run: TaskRun, wake_at_ms: int, now_ms: int | None = None) -> TaskRun | None:
    """Before the scan enqueues a waiting run: look again only if the message went missing."""
    actions: list[Any] = [M.wake_at.set(wake_at_ms)]
    if now_ms is not None:
        actions.append(M.enqueued_at.set(now_ms))
    return _update(run, actions, M.status.is_in(*st.WAITING) & (M.wake_at == run.wake_at))


def release_expired_claim(run: TaskRun, now_ms: int, wake_at_ms: int) -> TaskRun | None:
    """A worker died holding the run and its message is gone: make it deliverable again."""
    return _update(
        run,
        [
            M.status.set(RunStatus.PENDING),
            M.deliver_at.set(now_ms),
            M.wake_shard.set(_shard(run.run_id)),
            M.wake_at.set(wake_at_ms),
            M.claim_token.remove(),
            M.claim_expires_at.remove(),
            M.updated_at.set(now_ms),
            M.expires_at.set(run_expires_at_s(now_ms)),
        ],
        (M.status == RunStatus.RUNNING) & (M.claim_token == run.claim_token) & (M.claim_expires_at < now_ms),
    )


def wake_at_claim_expiry(run: TaskRun) -> TaskRun | None:
    """The scan woke a run whose claim has not expired yet: look at it again when the claim expires."""
    if run.claim_expires_at is None:
        return None
    return _update(
        run,
        [M.wake_at.set(run.claim_expires_at)],
        (M.status == RunStatus.RUNNING) & (M.claim_token == run.claim_token) & M.wake_shard.exists(),
    )


def watch(run: TaskRun, wake_at_ms: int, *, enqueued_at: int | None = None) -> TaskRun | None:
    """Give an unfinished run sent at its creation (no `wake` entry) a `wake` entry, so the scan looks
    after it from now on (with `enqueued_at`: the scan is about to send it again); False if it
    finished or changed since it was read."""
    same = M.status == run.status
    if run.status == RunStatus.RUNNING:
        same &= M.claim_token == run.claim_token
    actions: list[Any] = [M.wake_shard.set(_shard(run.run_id)), M.wake_at.set(wake_at_ms)]
    if enqueued_at is not None:
        actions.append(M.enqueued_at.set(enqueued_at))
    return _update(run, actions, M.wake_shard.does_not_exist() & same)


def time_floor(ms: int) -> str:
    """Sorts before the id of every run created at `ms` or later, after every earlier one."""
    return ids.time_floor("run", ms)


def per_partition_page(wanted: int) -> int:
    """The query page size for each of an App's partitions when `wanted` runs are merged from them:
    run ids hash evenly, so each gives about its share; one that gives more is read on, page by
    page, as the merge reaches it."""
    return -(-wanted // RUN_PARTITIONS) + 2


def _merged(app_id: str, condition: Any, wanted: int, *, newest_first: bool) -> list[TaskRunModel]:
    """Up to `wanted` of the App's stored runs whose run id meets `condition`, in run id order
    (newest first if told): a merge of the lazily paged queries of its partitions. Items, not
    entities: a caller goes on after the last item read, whether or not every one maps."""
    size = per_partition_page(wanted)
    queries = [
        M.query(part, condition, scan_index_forward=not newest_first, limit=wanted, page_size=size)
        for part in app_run_partitions(app_id)
    ]
    merged = heapq.merge(*queries, key=lambda row: row.run_id, reverse=newest_first)
    return list(itertools.islice(merged, wanted))


@dataclass(frozen=True)
class RunsRead:
    runs: list[TaskRun]  # the runs read that map to a TaskRun, in run id order
    last_id: str | None  # the id of the last run read, mapped or not: where the next read goes on
    full: bool  # as many were read as asked for: there may be more


def created_between(
    app_id: str, after_key: str, until_ms: int, limit: int, unreadable: Unreadable = left_out
) -> RunsRead:
    """Up to `limit` of the App's runs created after `after_key` (a run id, or a time_floor) and at
    the latest at `until_ms`, oldest first: the window's runs of each of the App's partitions
    (keyed by time-ordered run id), merged, so it reads nothing older (eventually consistent: a
    stale item only makes the check's conditional write fail). A run that does not map is told to
    `unreadable` and passed over."""
    upper = time_floor(until_ms + 1)
    if after_key >= upper:
        return RunsRead([], None, False)
    rows = _merged(app_id, M.run_id.between(after_key, upper), limit + 1, newest_first=False)
    rows = [row for row in rows if row.run_id != after_key][:limit]
    return RunsRead(list(_entities(rows, unreadable)), rows[-1].run_id if rows else None, len(rows) == limit)


def drop_from_wake_index(run: TaskRun) -> TaskRun | None:
    return _update(run, [M.wake_shard.remove(), M.wake_at.remove()], M.status.is_in(*st.TERMINAL))


def poison(run: TaskRun, now_ms: int, reason: str) -> TaskRun | None:
    """A message the queue gave up on: its run becomes a dead letter only while it is stuck -- due and
    still waiting, or claimed by a worker whose claim expired. A run a live worker holds, or whose next
    attempt is not due yet, is left alone (the message was a stale duplicate)."""
    actions = [
        *_terminal_actions(RunStatus.DEAD_LETTER, now_ms),
        M.last_error.set(reason),
        M.last_error_kind.set("poison"),
        M.dl_app_id.set(run.app_id),
        M.dead_key.set(created_key(now_ms, run.run_id)),
    ]
    stuck = (M.status.is_in(*st.WAITING) & (M.deliver_at <= now_ms)) | (
        (M.status == RunStatus.RUNNING) & (M.claim_expires_at < now_ms)
    )
    return _ending_uncounted(run, actions, stuck)


def replay(
    run: TaskRun, now_ms: int, wake_at_ms: int, *, from_statuses: tuple[str, ...] = (RunStatus.DEAD_LETTER,)
) -> TaskRun | None:
    """A dead letter (or, for a recover, a failed run) starts a new attempt series; earlier
    attempts stay visible."""
    actions = [
        M.status.set(RunStatus.PENDING),
        M.series.add(1),
        M.attempt_count.set(0),
        M.deliver_at.set(now_ms),
        M.wake_shard.set(_shard(run.run_id)),
        M.wake_at.set(wake_at_ms),
        M.dl_app_id.remove(),
        M.dead_key.remove(),
        M.finished_at.remove(),
        M.updated_at.set(now_ms),
        M.expires_at.set(run_expires_at_s(now_ms)),
    ]
    return _update(run, actions, M.status.is_in(*from_statuses))


DeadLetterItems = list[tuple[TaskRun | None, dict[str, Any]]]


def _with_resume_keys(rows: Iterable[TaskRunModel]) -> DeadLetterItems:
    """Each row of a `dead_letters` index page as (run, the index key that resumes right after it);
    a row that does not map is (None, its key), so a walk can still move past it."""
    out: DeadLetterItems = []
    for row in rows:
        key = {
            "app_part": {"S": row.app_part},
            "run_id": {"S": row.run_id},
            "dl_app_id": {"S": row.dl_app_id},
            "dead_key": {"S": row.dead_key},
        }
        out.append((next(iter(_entities([row])), None), key))
    return out


def ended_badly_pages(
    app_id: str,
    endpoint_id: str,
    since_ms: int,
    until_ms: int | None,
    now_ms: int,
    cursor: dict[str, Any] | None,
    page_size: int,
) -> Iterator[Page[tuple[TaskRun | None, dict[str, Any]]]]:
    """The Endpoint's runs that became dead letters or failed in the window, oldest first, one index
    page (at most `page_size` entries read) at a time: the dead letters' partition of the
    `dead_letters` index, then the failed runs'. Each run comes with the key that resumes after it; a
    page's `last_key` (its partition's) resumes right after the page; None after the last page of
    the failed runs."""
    partitions = [app_id, app_id + FAILED_PARTITION]
    if cursor is not None and cursor.get("dl_app_id") == {"S": partitions[1]}:
        partitions = partitions[1:]
    for partition in partitions:
        pages = query_pages(
            M,
            partition,
            cursor
            if cursor is not None and len(cursor) > 1 and cursor.get("dl_app_id") == {"S": partition}
            else None,
            page_size,
            index=M.dead_letters,
            range_key_condition=time_window(M.dead_key, since_ms, until_ms),
            filter_condition=alive(M, now_ms) & (M.endpoint_id == endpoint_id) & M.status.is_in(*RECOVERABLE),
        )
        for page in pages:
            last = page.last_key
            if last is None and partition != partitions[-1]:
                last = {"dl_app_id": {"S": partitions[-1]}}  # the failed runs' partition, from its start
            yield Page(_with_resume_keys(page.items), last)


def dead_letter_pages(
    app_id: str,
    cursor: dict[str, Any] | None,
    page_size: int,
    now_ms: int,
    *,
    endpoint_id: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    error_kind: str | None = None,
) -> Iterator[Page[tuple[TaskRun | None, dict[str, Any]]]]:
    """The App's dead letters matching the filters, oldest first, one index page (at most
    `page_size` entries read) at a time, each with the key that resumes after it; a page's
    `last_key` resumes right after the page."""
    cond = alive(M, now_ms)
    if endpoint_id:
        cond &= M.endpoint_id == endpoint_id
    if error_kind:
        cond &= M.last_error_kind == error_kind
    for page in query_pages(
        M,
        app_id,
        cursor,
        page_size,
        index=M.dead_letters,
        range_key_condition=time_window(M.dead_key, since_ms, until_ms),
        filter_condition=cond,
    ):
        yield Page(_with_resume_keys(page.items), page.last_key)


def wake_due(shard: str, until_ms: int | None, unreadable: Unreadable = left_out) -> Iterator[TaskRun]:
    """The runs of `shard` whose wake time is at most `until_ms` (all of them if None), in wake order.
    The index holds keys only, so the items are read with consistent batch gets; an entry whose run
    is gone, or whose run left the index or moved past `until_ms` since (the index lags the table),
    is left out."""
    cond = M.wake_at <= until_ms if until_ms is not None else None
    entries = M.wake.query(shard, range_key_condition=cond)  # the entry projects the table key
    rows = items_of_entries(
        M,
        ((entry.app_part, entry.run_id) for entry in entries),
        lambda run: (run.app_part, run.run_id),
        lambda run: (
            run.wake_shard is not None
            and run.wake_at is not None
            and (until_ms is None or run.wake_at <= until_ms)
        ),
    )
    yield from _entities(rows, unreadable)


def _list_key(app_id: str, run_id: str) -> dict[str, Any]:
    """Where a list page resumes: after this run of the App (the cursor names the App, which the
    API checks, and the run id; the partitions are the App's whatever the cursor says)."""
    return {"app_id": {"S": app_id}, "run_id": {"S": run_id}}


def is_list_cursor(cursor: dict[str, Any]) -> bool:
    """A cursor list_page can resume from: after a run."""
    return isinstance(cursor.get("run_id", {}).get("S"), str)


def list_page(
    app_id: str,
    limit: int,
    cursor: dict[str, Any] | None,
    now_ms: int,
    *,
    status: str | None = None,
    endpoint_id: str | None = None,
    source: str | None = None,
    source_id: str | None = None,
    max_keys: int = MAX_KEYS_PER_PAGE,
) -> Page[TaskRun]:
    """Up to `limit` of the App's runs matching the filters, newest first. Reads the App's runs in
    batches (its partitions' queries merged, eventually consistent) and filters here. The cursor (the key of the last run returned,
    or of the last run read) resumes exactly after it; a page stops after `max_keys` runs read even
    with fewer matching, so a filter that matches little never reads an App's whole history in one
    request."""
    wanted = RunFilter(app_id, now_ms, status, endpoint_id, source, source_id)
    read: dict[str, TaskRun] = {}
    Key = tuple[str, dict[str, Any]]

    def read_keys(start: dict[str, Any] | None, size: int) -> tuple[list[Key], Any]:
        before = None if start is None else start["run_id"]["S"]
        rows = _merged(app_id, None if before is None else M.run_id < before, size, newest_first=True)
        read.update((run.run_id, run) for run in _entities(rows))  # one it cannot read is left out
        after = _list_key(app_id, rows[-1].run_id) if len(rows) == size else None
        return [(row.run_id, _list_key(app_id, row.run_id)) for row in rows], after

    def fetch(keys: list[Key]) -> dict[str, TaskRun]:
        return {run_id: read[run_id] for run_id, _ in keys if run_id in read}  # read by the query

    items, last_key = collect_page(
        read_keys, fetch, lambda k: k[0], lambda k: k[1], wanted, limit, cursor, max_keys
    )
    return Page(items=items, last_key=last_key)


def dead_letters_page(
    app_id: str,
    limit: int,
    cursor: dict[str, Any] | None,
    now_ms: int,
    *,
    endpoint_id: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    error_kind: str | None = None,
) -> Page[TaskRun]:
    rk = time_window(M.dead_key, since_ms, until_ms)
    cond = alive(M, now_ms)
    if endpoint_id:
        cond &= M.endpoint_id == endpoint_id
    if error_kind:
        cond &= M.last_error_kind == error_kind
    page = query_page(
        M, app_id, limit, cursor, index=M.dead_letters, range_key_condition=rk, filter_condition=cond
    )
    return Page(list(_entities(page.items)), page.last_key)


def get_many(app_id: str, run_ids: list[str], *, consistent: bool = True) -> list[TaskRun]:
    """The App's runs among `run_ids`: batch reads (in pages of 100), strongly consistent unless
    told; runs that do not exist, or are another App's, are left out, and the order is not the
    order of `run_ids`."""
    out: list[TaskRun] = []
    if not app_id:
        return out
    run_ids = [run_id for run_id in run_ids if run_id]
    for start in range(0, len(run_ids), BATCH_GET_MAX):
        keys = [(run_partition(app_id, run_id), run_id) for run_id in run_ids[start : start + BATCH_GET_MAX]]
        out.extend(_entities(M.batch_get(keys, consistent_read=consistent)))
    return out
