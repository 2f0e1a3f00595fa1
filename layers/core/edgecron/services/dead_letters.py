"""The DLQ consumer's use case: a message SQS gave up on makes its run a dead letter with the reason,
if the run is stuck with that message. SQS may also hand over a stale duplicate: the message of a run
that a live worker holds, or whose next attempt another message already scheduled; that run is healthy
and keeps going. A schedule run already final may have left its Fire open (its workers died before
settling it), which is settled here as a worker would."""

from __future__ import annotations

from edgecron import clock
from edgecron.data import runs as run_data
from edgecron.domain import run_states as st
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import RunStatus
from edgecron.errors import StoredItemUnreadable
from edgecron.observability import DEAD_LETTERED, STORED_ITEMS_UNREADABLE, count, logger
from edgecron.schemas.messages import DeliveryBody
from edgecron.services.delivery import after_run_finished, record_lost_attempt
from edgecron.services.fires import settle


def _healthy(run: TaskRun, now_ms: int) -> str | None:
    """Why the run is not stuck with the message (None: it is)."""
    if run.status in st.TERMINAL:
        return "already_final"
    if (
        run.status == RunStatus.RUNNING
        and run.claim_expires_at is not None
        and run.claim_expires_at >= now_ms
    ):
        return "in_flight"
    if run.status in st.WAITING and run.deliver_at is not None and run.deliver_at > now_ms:
        return "scheduled"
    return None


def handle_poison(body: DeliveryBody | str, receive_count: int) -> str:
    """`body` is the text of a message that does not parse. Returns what happened: dead_lettered |
    already_final | in_flight | scheduled | unknown_run | unparseable | unreadable (the run is stored
    in a form this release cannot read: the message is let go, as a failed one would come back for
    ever)."""
    if isinstance(body, str):
        logger.error("unparseable message in the delivery DLQ", extra={"body_prefix": body[:200]})
        return "unparseable"
    try:
        return _dead_letter(body, receive_count)
    except StoredItemUnreadable as error:
        logger.error(
            "poison message let go: this release cannot read its run",
            extra={"run_id": body.run_id, "app_id": body.app_id, "reason": error.reason},
        )
        count(STORED_ITEMS_UNREADABLE)
        return "unreadable"


def _dead_letter(body: DeliveryBody, receive_count: int) -> str:
    run_id = body.run_id
    run = run_data.get(body.app_id, run_id, consistent=True)
    if run is None:
        logger.warning("DLQ message for an unknown run", extra={"run_id": run_id})
        return "unknown_run"
    now_ms = clock.to_ms(clock.now())
    healthy = _healthy(run, now_ms)
    if healthy is not None:
        logger.info("stale DLQ message for a healthy run", extra={"run_id": run_id, "state": healthy})
        if healthy == "already_final":
            # the workers that finished it may each have died before settling its Fire: this
            # message was the last one to come back, so settle it here, as a worker would
            settle.run_final_again(run, now_ms)
        return healthy
    reason = f"poison message: delivery failed {receive_count} times without an answer from the worker"
    dead = run_data.poison(run, now_ms, reason)
    if dead is not None:
        if run.status == RunStatus.RUNNING:  # it died mid-attempt: history keeps one Attempt per HTTP call
            record_lost_attempt(dead, run.total_attempts, run.attempt_count, now_ms)
        count(DEAD_LETTERED)
        after_run_finished(dead, RunStatus.DEAD_LETTER, now_ms)
        return "dead_lettered"
    fresh = run_data.get(body.app_id, run_id, consistent=True)  # it changed since it was read: say how
    return (_healthy(fresh, now_ms) if fresh is not None else None) or "already_final"
