"""The worker's use case: claim a Task Run, make one signed HTTP attempt, record it, decide what
happens next (success, retry, failure, dead letter) and store that before anything is enqueued.

An attempt never outlives the worker's invocation: its deadline is the endpoint's ``timeout_ms`` or the
function's own deadline minus :data:`FINISH_MARGIN_SEC` (the time recording the result takes), whichever
comes first. A message that arrives with less than :data:`MIN_ATTEMPT_SEC` of that left is not claimed
at all: it is sent again to the queue for a fresh invocation, and nothing is recorded."""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import attempts as attempt_data
from edgecron.data import endpoints as endpoint_data
from edgecron.data import flow_control as flow_data
from edgecron.data import run_checks
from edgecron.data import runs as run_data
from edgecron.data.expiry import expires_at_s
from edgecron.data.queues import MAX_DELAY_SEC, DeliveryMessage, send_deliveries
from edgecron.domain import flow_control as flow
from edgecron.domain import run_states as st
from edgecron.domain.attempts import Attempt
from edgecron.domain.delivery_request import edgecron_headers, request_body
from edgecron.domain.endpoints import Endpoint
from edgecron.domain.http_headers import header_problem, is_reserved
from edgecron.domain.outcome import AttemptResult, Decision, decide
from edgecron.domain.retry import DEFAULT_POLICY, RetryPolicySpec
from edgecron.domain.schedules import Schedule
from edgecron.domain.signing import webhook_headers
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import DisabledReason, ErrorKind, OperationalEvent, RunStatus, Source
from edgecron.domain.wake import wake_entry
from edgecron.errors import StoredItemUnreadable
from edgecron.observability import (
    ATTEMPT_LATENCY_MS,
    ATTEMPTS_LOST,
    DEAD_LETTERED,
    DELIVERY_FAILED,
    DELIVERY_SUCCEEDED,
    FIRE_LAG_MS,
    RETRY_SCHEDULED,
    STORED_ITEMS_UNREADABLE,
    count,
    logger,
    millis,
)
from edgecron.services import endpoint_health, operational_events
from edgecron.services import endpoints as endpoint_service
from edgecron.services.fires import settle
from edgecron.services.retry_policies import resolve_spec

if TYPE_CHECKING:
    from edgecron.services.http_sender import HttpOutcome

_rng = random.SystemRandom()
EARLY_MS = 1_000  # how early a message may be claimed (SQS delays are whole seconds)
FINISH_MARGIN_SEC = 3.0  # kept after an attempt to record it, before the function's deadline
MIN_ATTEMPT_SEC = 1.0  # less than this left (after the margin): the message waits for a new invocation
DISABLED_FOR_FAILING = AttemptResult(
    None, "endpoint disabled for failing: not sent", ErrorKind.ENDPOINT_DISABLED
)


@dataclass(frozen=True)
class DeliveryReport:
    run_id: str
    outcome: str  # success | retry | failed | dead_letter | skipped | requeued | cancelled | held


_T = TypeVar("_T")


class DeliveryBatch:
    """Reads shared by the deliveries of one worker invocation: an Endpoint or Retry Policy that
    several runs of the batch name is read once, by the first delivery that needs it, while the
    others wait for that read. It lives for one invocation only, so an edit made meanwhile is seen
    by the next batch (a retry, a redelivery); nothing a user can change is kept longer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: dict[Hashable, Future[object]] = {}

    def _once(self, key: Hashable, read: Callable[[], _T]) -> _T:
        with self._lock:
            pending = self._reads.get(key)
            first = pending is None
            if pending is None:
                pending = self._reads[key] = Future()
        if first:
            try:
                pending.set_result(read())
            except BaseException as exc:  # the waiting deliveries fail with it; SQS delivers them again
                pending.set_exception(exc)
                with self._lock:
                    self._reads.pop(key, None)
                raise
        return pending.result()  # type: ignore[return-value]

    def endpoint(self, app_id: str, endpoint_id: str) -> Endpoint | None:
        return self._once(("endpoint", app_id, endpoint_id), lambda: endpoint_data.get(app_id, endpoint_id))

    def policy(self, app_id: str, policy_id: str | None) -> RetryPolicySpec:
        return self._once(("policy", app_id, policy_id), lambda: resolve_spec(app_id, policy_id))

    def secrets(self, endpoint: Endpoint, now_ms: int) -> list[str]:
        """The Endpoint's signing secrets, decrypted once for the batch (so its deliveries, which
        start together, do not all ask KMS for the same data key at once)."""
        key = ("secrets", endpoint.app_id, endpoint.endpoint_id, endpoint.version)
        unsealed = self._once(key, lambda: endpoint_service.unsealed_secrets(endpoint, now_ms))
        return endpoint_service.signing_secrets(unsealed, now_ms)


@dataclass(frozen=True)
class DeliveryContext:
    """What one attempt works from, each read once: the run as the claim returned it, its Endpoint
    (None once deleted), a schedule run's Schedule (its settle and auto-pause count go by it) and, through the batch, the retry policy its result needs (not read when
    the attempt succeeds)."""

    run: TaskRun
    endpoint: Endpoint | None
    batch: DeliveryBatch
    schedule: Schedule | None = None  # a schedule run's Schedule, read right before its request

    @property
    def policy_id(self) -> str | None:
        return self.run.retry_policy_id or (self.endpoint.retry_policy_id if self.endpoint else None)

    def policy(self) -> RetryPolicySpec:
        return self.batch.policy(self.run.app_id, self.policy_id)


def deliver(
    run_id: str,
    app_id: str = "",
    function_ends_by: float | None = None,
    batch: DeliveryBatch | None = None,
) -> DeliveryReport:
    """Process one delivery message. Raises only on infrastructure errors (SQS will redeliver).

    ``function_ends_by`` is the invocation's deadline as a ``time.monotonic()`` instant (from the
    Lambda context), ``None`` for no limit but the endpoint's timeout. ``batch`` shares reads with
    the other deliveries of the invocation (none: this delivery reads alone). A run stored in a form
    this release cannot read lets its message go: no worker could ever deliver it, and failing the
    message would only bring it back until SQS gives up, then fail it in the DLQ too."""
    try:
        return _deliver(run_id, app_id, function_ends_by, batch)
    except StoredItemUnreadable as error:
        logger.warning(
            "delivery message dropped: this release cannot read its run",
            extra={"run_id": run_id, "app_id": app_id, "reason": error.reason},
        )
        count(STORED_ITEMS_UNREADABLE)
        return DeliveryReport(run_id, "unreadable")


def _deliver(
    run_id: str, app_id: str, function_ends_by: float | None, batch: DeliveryBatch | None
) -> DeliveryReport:
    ends_by = None if function_ends_by is None else function_ends_by - FINISH_MARGIN_SEC
    if ends_by is not None and ends_by - time.monotonic() < MIN_ATTEMPT_SEC:
        return _requeue_for_time(run_id, app_id)
    now = clock.now()
    now_ms = clock.to_ms(now)
    run = run_data.claim(app_id, run_id, now_ms, early_ms=EARLY_MS)
    if run is None:
        return _not_claimed(app_id, run_id, now_ms)
    if run.claimed_from == RunStatus.RUNNING:  # took over an expired claim: its worker died mid-attempt
        record_lost_attempt(run, int(run.total_attempts) - 1, int(run.attempt_count) - 1, now_ms)
    batch = batch or DeliveryBatch()
    endpoint = batch.endpoint(run.app_id, run.endpoint_id)
    ctx = DeliveryContext(run, endpoint, batch)
    if endpoint is None:
        return _conclude(ctx, now, None, AttemptResult(None, "endpoint deleted", ErrorKind.ENDPOINT_DELETED))
    if endpoint.disabled_reason == DisabledReason.FAILING:  # parked, to replay once re-enabled
        return _conclude(ctx, now, None, DISABLED_FOR_FAILING)
    if not endpoint.active:
        return _conclude(
            ctx, now, None, AttemptResult(None, "endpoint inactive", ErrorKind.ENDPOINT_INACTIVE)
        )
    leased = False
    if endpoint.flow_limits is not None:
        held, leased = _flow_control(ctx, endpoint, endpoint.flow_limits, now_ms)
        if held is not None:
            return held
    try:
        _wait_until_due(run, now_ms)
        if run.source == Source.SCHEDULE:
            ctx = replace(ctx, schedule=settle.schedule_of(run))
            reason = settle.withheld(ctx.schedule, run)  # read last, right before the request
            if reason is not None:  # a pause, a delete or a timing edit that returned before wins
                settle.cancel_claimed(run, clock.to_ms(clock.now()), reason, ctx.schedule)
                return DeliveryReport(run_id, "cancelled")
            if run.fire_at is not None and run.total_attempts == 1:
                millis(FIRE_LAG_MS, max(0, clock.to_ms(clock.now()) - int(run.fire_at)))
        outcome = _attempt(ctx, endpoint, clock.to_ms(clock.now()), ends_by)
        return _conclude(ctx, clock.now(), outcome, outcome.result)
    finally:
        if leased:
            flow_data.release_lease(run.app_id, run.endpoint_id, run.run_id)


def _flow_control(
    ctx: DeliveryContext, endpoint: Endpoint, limits: flow.FlowLimits, now_ms: int
) -> tuple[DeliveryReport | None, bool]:
    """Apply the Endpoint's limits to the claimed run: (a report, if the run is held back for
    later, not sent; whether it holds an in-flight lease to give back after its result).

    The rate slot comes first (a run keeps the slot it was granted when it comes back for it), then
    the lease: a run that finds every lease taken takes a new slot when it comes back."""
    run = ctx.run
    interval = limits.interval_us
    if interval is not None:
        if run.flow_slot is not None and run.flow_slot == run.deliver_at:  # the slot it was granted
            slot_ms = run.flow_slot
        else:
            slot_us = flow_data.take_slot(run.app_id, run.endpoint_id, now_ms * flow.US_PER_MS, interval)
            slot_ms = flow.slot_ms_of(slot_us)
        wait = flow.slot_wait(slot_ms, now_ms)
        if wait == flow.Wait.IN_WORKER and not _wait_for(slot_ms):
            wait = flow.Wait.REQUEUE
        if wait == flow.Wait.REQUEUE:
            return _hold(run, slot_ms, now_ms, slot_ms=slot_ms), False
    if limits.max_in_flight is not None:
        leased = flow_data.acquire_lease(
            run.app_id,
            run.endpoint_id,
            run.run_id,
            run.claim_expires_at or now_ms,  # a worker that dies leaks nothing past its claim
            limits.max_in_flight,
            clock.to_ms(clock.now()),
        )
        if not leased:
            return _hold(run, now_ms + flow.LEASE_WAIT_MS, now_ms, slot_ms=None), False
        return None, True
    return None, False


def _wait_for(slot_ms: int) -> bool:
    """Wait, by the clock, for a slot under IN_PROCESS_WAIT_MS away (SQS delays are whole seconds);
    False if the clock did not get there within twice that much real time."""
    give_up = time.monotonic() + 2 * flow.IN_PROCESS_WAIT_MS / 1000
    while (left_ms := slot_ms - clock.to_ms(clock.now())) > 0:
        if time.monotonic() >= give_up:
            return False
        time.sleep(min(left_ms, 20) / 1000)
    return True


def _check_covers(run: TaskRun, now_ms: int) -> bool:
    """A run without a `wake` entry that the scan's check of recent runs is still to read: a short
    wait (a retry, a flow-control hold) needs no entry, since the check finds the run if its message is
    lost. Once the check may have passed the run, the wait writes the entry any other run gets."""
    return not run.has_wake_entry and run_checks.checked_later(run.run_id, now_ms, get_settings())


def _wake(run: TaskRun, due_ms: int, now_ms: int, *, sent: bool) -> int | None:
    """The `wake` entry of a run that waits until `due_ms` (a hold or a retry), its message re-sent
    with the delay (`sent`) or left to the scan."""
    return wake_entry(
        due_ms,
        sent=sent,
        checked_later=sent and _check_covers(run, now_ms),
        redispatch_after_ms=get_settings().redispatch_after_ms,
    )


def _hold(run: TaskRun, due_ms: int, now_ms: int, *, slot_ms: int | None) -> DeliveryReport:
    """Flow control holds the run back until `due_ms`: its claim is released (not an attempt, not a
    failure) and its message re-sent with the delay, or, beyond the SQS delay range, left to a
    `wake` entry at its due time. A run sent at its creation has no entry and gets none for a short
    wait while the scan's check of recent runs is still to read it, so waiting moves no index key."""
    delay_sec = max(0.0, (due_ms - now_ms) / 1000)
    direct = delay_sec <= MAX_DELAY_SEC
    wake_ms = _wake(run, due_ms, now_ms, sent=direct)
    held = run_data.release_for_flow(run, due_ms, wake_ms, now_ms, slot_ms=slot_ms)
    if held is None:
        logger.warning("run changed while flow control held it", extra={"run_id": run.run_id})
        return DeliveryReport(run.run_id, "skipped")
    settle.run_held_until(held, due_ms)
    if direct:
        send_deliveries([DeliveryMessage(run.run_id, run.app_id, delay_sec)], retry=True)
    logger.info(
        "delivery held by flow control",
        extra={"run_id": run.run_id, "endpoint_id": run.endpoint_id, "due_ms": due_ms},
    )
    return DeliveryReport(run.run_id, "held")


def _requeue_for_time(run_id: str, app_id: str) -> DeliveryReport:
    """Too little of the invocation is left for an attempt: hand the message to a new invocation."""
    if send_deliveries([DeliveryMessage(run_id, app_id)], retry=True):
        raise RuntimeError("could not requeue a delivery the invocation had no time left for")
    logger.info("delivery requeued: the invocation is about to end", extra={"run_id": run_id})
    return DeliveryReport(run_id, "requeued")


def _wait_until_due(run: TaskRun, now_ms: int) -> None:
    """SQS delays are whole seconds (rounded down), so a message may arrive up to 1 s early."""
    early_ms = int(run.deliver_at) - now_ms
    if 0 < early_ms <= EARLY_MS:
        time.sleep(early_ms / 1000)


def _not_claimed(app_id: str, run_id: str, now_ms: int) -> DeliveryReport:
    """A duplicate, a cancelled or finished run, or a message that arrived before its due time."""
    run = run_data.get(app_id, run_id, consistent=True)
    if run is not None and run.status in st.WAITING and run.deliver_at > now_ms:
        delay = (run.deliver_at - now_ms) / 1000
        if delay <= MAX_DELAY_SEC:
            send_deliveries([DeliveryMessage(run.run_id, run.app_id, delay)], retry=True)
            return DeliveryReport(run_id, "requeued")
    if run is not None and run.status in st.TERMINAL:
        settle.run_final_again(run, now_ms)  # its worker may have died before settling its Fire
    logger.info(
        "delivery message dropped", extra={"run_id": run_id, "status": run.status if run else "missing"}
    )
    return DeliveryReport(run_id, "skipped")


def _custom_headers(endpoint: Endpoint) -> tuple[dict[str, str], str | None]:
    """The endpoint's own headers that can be sent, or why they cannot. A header stored by an older
    version may break today's rule: a name EdgeCron sets is left out (EdgeCron's value wins), any other
    unsendable name or value fails the attempt before a byte is sent."""
    stored = endpoint.headers or {}
    if not isinstance(stored, dict):
        return {}, "headers must be an object of names to values"
    headers: dict[str, str] = {}
    for name, value in stored.items():
        if isinstance(name, str) and is_reserved(name):
            continue
        problem = header_problem(name, value)
        if problem is not None:
            return {}, problem
        headers[name] = value
    return headers, None


def _attempt(ctx: DeliveryContext, endpoint: Endpoint, now_ms: int, ends_by: float | None) -> HttpOutcome:
    # The HTTP client is the worker's alone (functions/worker/app.py loads it at its start): the scan,
    # which imports this module to record lost attempts, never loads it.
    from edgecron.services.http_sender import USER_AGENT, HttpOutcome, send

    run = ctx.run
    custom, problem = _custom_headers(endpoint)
    if problem is not None:
        return HttpOutcome(
            AttemptResult(None, f"header not sendable: {problem}", ErrorKind.INVALID_REQUEST), 0, None
        )
    body = request_body(run.payload, endpoint.method)
    headers = {**custom, **edgecron_headers(USER_AGENT, int(run.attempt_count), _fire_of(run))}
    secrets = ctx.batch.secrets(endpoint, now_ms)
    headers.update(webhook_headers(secrets, run.run_id, now_ms // 1000, body or b""))
    return send(endpoint.method, endpoint.url, headers, body, int(endpoint.timeout_ms), ends_by=ends_by)


def _fire_of(run: TaskRun) -> tuple[str, int] | None:
    """(schedule id, nominal fire time) of a schedule's run, which its request names."""
    if run.source != Source.SCHEDULE or run.source_id is None or run.fire_at is None:
        return None
    return run.source_id, int(run.fire_at)


def _trace_id() -> str | None:
    header = os.environ.get("_X_AMZN_TRACE_ID", "")
    root = next((p.split("=", 1)[1] for p in header.split(";") if p.startswith("Root=")), None)
    return root


def _attempt_of(
    run: TaskRun, outcome: HttpOutcome | None, result: AttemptResult, decision: Decision, started_ms: int
) -> Attempt:
    return Attempt(
        run_id=run.run_id,
        seq=int(run.total_attempts),
        app_id=run.app_id,
        attempt_no=int(run.attempt_count),
        series=int(run.series),
        request_id=uuid.uuid4().hex,
        status_code=result.status_code,
        latency_ms=outcome.latency_ms if outcome else 0,
        response_summary=outcome.response_summary if outcome else None,
        error=result.error,
        error_kind=result.error_kind,
        error_detail=result.error_detail,
        outcome=decision.outcome,
        trace_id=_trace_id(),
        started_at=started_ms,
        expires_at=expires_at_s(started_ms),
    )


LOST_ATTEMPT_ERROR = (
    "the worker making this attempt stopped before it recorded a result (its claim expired); "
    "the request may or may not have reached the endpoint"
)


def record_lost_attempt(run: TaskRun, seq: int, attempt_no: int, now_ms: int) -> None:
    """History has one Attempt per HTTP call: a worker that died mid-call left none, so the one that
    takes the run over records it, unless the dead worker got as far as recording it itself. The
    AttemptsLost metric counts the record written, not each tick or worker that finds the call lost."""
    if seq < 1 or attempt_no < 1:
        return
    written = attempt_data.put(
        Attempt(
            run_id=run.run_id,
            seq=seq,
            app_id=run.app_id,
            attempt_no=attempt_no,
            series=int(run.series),
            request_id=uuid.uuid4().hex,
            status_code=None,
            latency_ms=0,
            response_summary=None,
            error=LOST_ATTEMPT_ERROR,
            error_kind=ErrorKind.WORKER_LOST,
            outcome="retry",
            started_at=now_ms,
            expires_at=expires_at_s(now_ms),
        )
    )
    if written:
        count(ATTEMPTS_LOST)


def _conclude(
    ctx: DeliveryContext, now: datetime, outcome: HttpOutcome | None, result: AttemptResult
) -> DeliveryReport:
    run = ctx.run
    now_ms = clock.to_ms(now)
    succeeded = (
        result.error_kind is None and result.status_code is not None and 200 <= result.status_code < 300
    )
    policy = DEFAULT_POLICY if succeeded else ctx.policy()  # no read on success
    decision = decide(result, int(run.attempt_count), policy, now, _rng.random())
    if decision.error_kind is not None:  # the receiver's own verdict (edgecron-retry: stop)
        result = replace(result, error_kind=decision.error_kind)
    started_ms = now_ms - (outcome.latency_ms if outcome else 0)
    attempt = _attempt_of(run, outcome, result, decision, started_ms)
    # The first Attempt rides on the run's own update; any other is stored before it, so a crash
    # between the two still leaves the Attempt (the run stays claimed and is taken over).
    inline = attempt if attempt_data.fits_in_run(attempt) else None
    if inline is None:
        attempt_data.put(attempt)
    if outcome is not None:
        millis(ATTEMPT_LATENCY_MS, outcome.latency_ms)
    error = None if decision.outcome == "success" else decision.reason
    kind = result.error_kind or (_kind_of(result.status_code))
    if decision.outcome == "retry":
        due_ms = now_ms + int((decision.delay_sec or 1) * 1000)
        direct = (decision.delay_sec or 0) <= MAX_DELAY_SEC
        wake_ms = _wake(run, due_ms, now_ms, sent=direct)
        waiting = run_data.schedule_retry(
            run,
            due_ms,
            wake_ms,
            now_ms,
            status_code=result.status_code,
            error=error,
            error_kind=kind,
            first_attempt=inline,
        )
        if waiting is not None:
            count(RETRY_SCHEDULED)
            settle.run_waits_for_retry(waiting)
            if direct:
                send_deliveries(
                    [DeliveryMessage(run.run_id, run.app_id, (due_ms - now_ms) / 1000)], retry=True
                )
        elif inline is not None:
            attempt_data.put(attempt)  # the run moved on meanwhile; the HTTP call still happened
        return DeliveryReport(run.run_id, "retry")
    status = {"success": RunStatus.SUCCESS, "failed": RunStatus.FAILED, "dead_letter": RunStatus.DEAD_LETTER}[
        decision.outcome
    ]
    finished = run_data.finish(
        run,
        status,
        now_ms,
        status_code=result.status_code,
        error=error,
        error_kind=kind,
        first_attempt=inline,
    )
    if finished is not None:
        count(
            {"success": DELIVERY_SUCCEEDED, "failed": DELIVERY_FAILED, "dead_letter": DEAD_LETTERED}[
                decision.outcome
            ]
        )
        after_run_finished(finished, status, now_ms, ctx.endpoint, ctx.schedule)
    else:
        if inline is not None:
            attempt_data.put(attempt)  # the run moved on meanwhile; the HTTP call still happened
        logger.warning("run changed while it was delivered", extra={"run_id": run.run_id})
    return DeliveryReport(run.run_id, decision.outcome)


def after_run_finished(
    run: TaskRun,
    status: str,
    now_ms: int,
    endpoint: Endpoint | None = None,
    schedule: Schedule | None = None,
) -> None:
    """Count the run for its Endpoint's health and settle what it belongs to (a schedule's Fire)
    once the run is terminal. `endpoint` and `schedule` are those the delivery read, if it did."""
    endpoint_health.run_ended(run, status, now_ms, endpoint)
    if status == RunStatus.DEAD_LETTER and run.last_error_kind != ErrorKind.ENDPOINT_DISABLED:
        facts = operational_events.run_facts(run)
        operational_events.publish(run.app_id, OperationalEvent.RUN_DEAD_LETTERED, facts, now_ms, cause=run)
    if run.source == Source.SCHEDULE:
        settle.run_settled(run, status, now_ms, schedule)


def _kind_of(status_code: int | None) -> str | None:
    if status_code is None or 200 <= status_code < 300:
        return None
    if status_code == 429:
        return "http_429"
    if status_code >= 500:
        return "http_5xx"
    if 300 <= status_code < 400:
        return "redirect"
    return "http_4xx"
