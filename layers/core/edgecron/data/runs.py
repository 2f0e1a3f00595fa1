"""Task Runs: every state change is a conditional write, so two workers, a cancel and a scan never
both win. The `wake` index (docs/data-model.md) tells the scan when to look at a run again."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data.conditional import save_if, update_if
from edgecron.data.expiry import expires_at_s, is_alive
from edgecron.data.models import TaskRunModel
from edgecron.data.paging import Page, query_page
from edgecron.domain import run_states as st

M = TaskRunModel


def created_key(created_ms: int, run_id: str) -> str:
    return f"{created_ms:013d}#{run_id}"


def new_run(
    *,
    run_id: str,
    app_id: str,
    endpoint_id: str,
    source: str,
    source_id: str | None,
    payload: Any,
    deliver_at_ms: int,
    wake_at_ms: int,
    now_ms: int,
    fire_at: int | None = None,
    retry_policy_id: str | None = None,
) -> TaskRunModel:
    return M(
        run_id=run_id,
        app_id=app_id,
        endpoint_id=endpoint_id,
        source=source,
        source_id=source_id,
        fire_at=fire_at,
        payload=payload,
        retry_policy_id=retry_policy_id,
        status=st.PENDING,
        deliver_at=deliver_at_ms,
        wake_shard=ids.shard_of(run_id, get_settings().shards),
        wake_at=wake_at_ms,
        created_at=now_ms,
        updated_at=now_ms,
        created_key=created_key(now_ms, run_id),
        expires_at=expires_at_s(now_ms),
    )


def put_new(run: TaskRunModel) -> bool:
    """Create the run unless it exists (deterministic ids make a second create a no-op)."""
    return save_if(run, M.run_id.does_not_exist())


def get(run_id: str, *, consistent: bool = False) -> TaskRunModel | None:
    try:
        return M.get(run_id, consistent_read=consistent)
    except DoesNotExist:
        return None


def get_for_app(app_id: str, run_id: str, now_ms: int) -> TaskRunModel | None:
    """A run of this App that has not expired; another App's run is indistinguishable from none."""
    run = get(run_id)
    if run is None or run.app_id != app_id or not is_alive(run.expires_at, now_ms):
        return None
    return run


def claim(run_id: str, now_ms: int, early_ms: int = 1_000) -> TaskRunModel | None:
    """Take a due waiting run (or one whose previous claim expired) for one attempt; None if another
    worker has it, it is finished or cancelled, or it is not due yet."""
    claim_ms = get_settings().claim_sec * 1000
    run = M(run_id=run_id)
    waiting_and_due = M.status.is_in(*st.WAITING) & (M.deliver_at <= now_ms + early_ms)
    expired = (M.status == st.RUNNING) & (M.claim_expires_at < now_ms)
    claimed = update_if(
        run,
        [
            M.status.set(st.RUNNING),
            M.claim_token.set(uuid.uuid4().hex),
            M.claim_expires_at.set(now_ms + claim_ms),
            M.wake_at.set(now_ms + claim_ms),
            M.attempt_count.add(1),
            M.total_attempts.add(1),
            M.updated_at.set(now_ms),
        ],
        M.run_id.exists() & (waiting_and_due | expired),
    )
    return run if claimed else None


def _owned(run: TaskRunModel) -> Any:
    return (M.status == st.RUNNING) & (M.claim_token == run.claim_token)


def _terminal_actions(status: str, now_ms: int) -> list[Any]:
    return [
        M.status.set(status),
        M.finished_at.set(now_ms),
        M.updated_at.set(now_ms),
        M.wake_shard.remove(),
        M.wake_at.remove(),
        M.claim_token.remove(),
        M.claim_expires_at.remove(),
        M.next_retry_at.remove(),
    ]


def _result_actions(status_code: int | None, error: str | None, error_kind: str | None) -> list[Any]:
    return [
        M.last_status_code.set(status_code) if status_code is not None else M.last_status_code.remove(),
        M.last_error.set(error) if error else M.last_error.remove(),
        M.last_error_kind.set(error_kind) if error_kind else M.last_error_kind.remove(),
    ]


def finish(
    run: TaskRunModel,
    status: str,
    now_ms: int,
    *,
    status_code: int | None = None,
    error: str | None = None,
    error_kind: str | None = None,
) -> bool:
    """End the claimed run: success, failed or dead_letter."""
    actions = _terminal_actions(status, now_ms) + _result_actions(status_code, error, error_kind)
    if status == st.DEAD_LETTER:
        actions += [M.dl_app_id.set(run.app_id), M.dead_key.set(created_key(now_ms, run.run_id))]
    return update_if(run, actions, _owned(run))


def schedule_retry(
    run: TaskRunModel,
    due_ms: int,
    wake_at_ms: int,
    now_ms: int,
    *,
    status_code: int | None,
    error: str | None,
    error_kind: str | None,
) -> bool:
    """Store the retry (status, due time, wake time) before any message announces it."""
    actions = [
        M.status.set(st.RETRY_SCHEDULED),
        M.next_retry_at.set(due_ms),
        M.deliver_at.set(due_ms),
        M.wake_at.set(wake_at_ms),
        M.claim_token.remove(),
        M.claim_expires_at.remove(),
        M.updated_at.set(now_ms),
        *_result_actions(status_code, error, error_kind),
    ]
    return update_if(run, actions, _owned(run))


def cancel(run: TaskRunModel, now_ms: int, reason: str) -> bool:
    actions = [*_terminal_actions(st.CANCELLED, now_ms), M.last_error.set(reason), M.last_error_kind.remove()]
    return update_if(run, actions, M.status.is_in(*st.CANCELLABLE))


def mark_enqueued(run: TaskRunModel, wake_at_ms: int) -> bool:
    """After the scan enqueued a waiting run: look again only if the message went missing."""
    return update_if(
        run, [M.wake_at.set(wake_at_ms)], M.status.is_in(*st.WAITING) & (M.wake_at == run.wake_at)
    )


def release_expired_claim(run: TaskRunModel, now_ms: int, wake_at_ms: int) -> bool:
    """A worker died holding the run and its message is gone: make it deliverable again."""
    return update_if(
        run,
        [
            M.status.set(st.PENDING),
            M.deliver_at.set(now_ms),
            M.wake_at.set(wake_at_ms),
            M.claim_token.remove(),
            M.claim_expires_at.remove(),
            M.updated_at.set(now_ms),
        ],
        (M.status == st.RUNNING) & (M.claim_token == run.claim_token) & (M.claim_expires_at < now_ms),
    )


def drop_from_wake_index(run: TaskRunModel) -> bool:
    return update_if(run, [M.wake_shard.remove(), M.wake_at.remove()], M.status.is_in(*st.TERMINAL))


def poison(run: TaskRunModel, now_ms: int, reason: str) -> bool:
    """A message the queue gave up on: its run becomes a dead letter unless it already finished."""
    actions = [
        *_terminal_actions(st.DEAD_LETTER, now_ms),
        M.last_error.set(reason),
        M.last_error_kind.set("poison"),
        M.dl_app_id.set(run.app_id),
        M.dead_key.set(created_key(now_ms, run.run_id)),
    ]
    return update_if(run, actions, M.status.is_in(st.PENDING, st.RETRY_SCHEDULED, st.RUNNING))


def replay(run: TaskRunModel, now_ms: int, wake_at_ms: int) -> bool:
    """A dead letter starts a new attempt series; earlier attempts stay visible."""
    actions = [
        M.status.set(st.PENDING),
        M.series.add(1),
        M.attempt_count.set(0),
        M.deliver_at.set(now_ms),
        M.wake_shard.set(ids.shard_of(run.run_id, get_settings().shards)),
        M.wake_at.set(wake_at_ms),
        M.dl_app_id.remove(),
        M.dead_key.remove(),
        M.finished_at.remove(),
        M.updated_at.set(now_ms),
        M.expires_at.set(expires_at_s(now_ms)),
    ]
    return update_if(run, actions, M.status == st.DEAD_LETTER)


def wake_due(shard: str, until_ms: int | None) -> Iterator[TaskRunModel]:
    cond = M.wake_at <= until_ms if until_ms is not None else None
    yield from M.wake.query(shard, range_key_condition=cond)


def _alive(now_ms: int) -> Any:
    return M.expires_at.does_not_exist() | (M.expires_at > now_ms // 1000)


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
) -> Page[TaskRunModel]:
    cond = _alive(now_ms)
    if status:
        cond &= M.status == status
    if endpoint_id:
        cond &= M.endpoint_id == endpoint_id
    if source:
        cond &= M.source == source
    if source_id:
        cond &= M.source_id == source_id
    return query_page(M, app_id, limit, cursor, index=M.by_app, filter_condition=cond)


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
) -> Page[TaskRunModel]:
    rk: Any = None
    if since_ms is not None and until_ms is not None:
        rk = M.dead_key.between(f"{since_ms:013d}", f"{until_ms:013d}~")
    elif since_ms is not None:
        rk = M.dead_key >= f"{since_ms:013d}"
    elif until_ms is not None:
        rk = M.dead_key <= f"{until_ms:013d}~"
    cond = _alive(now_ms)
    if endpoint_id:
        cond &= M.endpoint_id == endpoint_id
    if error_kind:
        cond &= M.last_error_kind == error_kind
    return query_page(
        M, app_id, limit, cursor, index=M.dead_letters, range_key_condition=rk, filter_condition=cond
    )


def get_many(run_ids: list[str]) -> list[TaskRunModel]:
    """Strongly consistent batch read (in pages of 100)."""
    out: list[TaskRunModel] = []
    for start in range(0, len(run_ids), 100):
        out.extend(M.batch_get(run_ids[start : start + 100], consistent_read=True))
    return out
