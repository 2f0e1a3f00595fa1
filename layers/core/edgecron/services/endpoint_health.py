"""Endpoint health on the delivery path: every finished run is counted against its Endpoint, a
healthy Endpoint whose run fails is warned about, and one that keeps failing past both limits of
its disable policy is disabled, recorded as a notification and announced on the alerts topic.

Nothing here may fail a delivery: the run's result is already stored when this runs, so an error
is logged and the count is lost rather than the run retried."""

from __future__ import annotations

from typing import Any

from edgecron.clock import iso_ms
from edgecron.data import endpoints as data
from edgecron.data import notifications
from edgecron.domain.endpoint_health import SUCCESS_RESOLUTION_MS, counts, should_disable, success_needs_write
from edgecron.domain.endpoints import Endpoint
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import NotificationKind, OperationalEvent, RunStatus
from edgecron.observability import ENDPOINTS_DISABLED, ENDPOINTS_FAILING, count, logger
from edgecron.services import operational_events

FAILING_WARNING_QUIET_MS = 3_600_000  # at most one ENDPOINT_FAILING warning per Endpoint an hour


def run_ended(run: TaskRun, status: str, now_ms: int, endpoint: Endpoint | None = None) -> None:
    """Count one finished run. `endpoint` is the Endpoint as the delivery read it (None when it
    was not read): a success on a healthy one writes nothing unless the last success on record is
    more than a minute old."""
    try:
        if status == RunStatus.SUCCESS:
            _succeeded(run, endpoint, now_ms)
            return
        if counts(status in (RunStatus.FAILED, RunStatus.DEAD_LETTER), run.last_error_kind):
            _failed(run, now_ms)
    except Exception:
        logger.exception("could not record the endpoint's health", extra={"endpoint_id": run.endpoint_id})


# Successes this container wrote lately, per Endpoint: the deliveries of one batch share one read of
# the Endpoint, so without this each of them would see the same old last_success_at and write it.
_written_successes: dict[tuple[str, str], int] = {}
_WRITTEN_SUCCESSES_MAX = 10_000


def _succeeded(run: TaskRun, endpoint: Endpoint | None, now_ms: int) -> None:
    key = (run.app_id, run.endpoint_id)
    health = endpoint.health if endpoint is not None else None
    if health is not None and health.consecutive_failures == 0:
        written = _written_successes.get(key)
        if written is not None and now_ms - written < SUCCESS_RESOLUTION_MS:
            return
    if health is None or success_needs_write(health, now_ms):
        data.record_success(run.app_id, run.endpoint_id, now_ms)
        if len(_written_successes) >= _WRITTEN_SUCCESSES_MAX:
            _written_successes.clear()
        _written_successes[key] = now_ms


def _failed(run: TaskRun, now_ms: int) -> None:
    app_id, endpoint_id = run.app_id, run.endpoint_id
    after = data.record_failure(app_id, endpoint_id, now_ms)
    if after is None:  # deleted meanwhile
        return
    started = after.health.consecutive_failures == 1  # exactly one writer sees the streak begin
    if started and data.claim_failing_warning(app_id, endpoint_id, now_ms, FAILING_WARNING_QUIET_MS):
        _warn_failing(after, run, now_ms)
    if after.active and should_disable(after.health, after.disable_policy, now_ms):
        disabled = data.disable_failing(app_id, endpoint_id, now_ms)
        if disabled is not None:  # exactly one writer disables it
            _announce_disabled(disabled, run, now_ms)


def _facts(endpoint: Endpoint) -> dict[str, Any]:
    return {
        "endpoint_id": endpoint.endpoint_id,
        "url": endpoint.url,
        "consecutive_failures": endpoint.health.consecutive_failures,
        "failing_since": iso_ms(endpoint.health.failing_since),
        "last_success_at": iso_ms(endpoint.health.last_success_at),
    }


def _name(endpoint: Endpoint) -> str:
    return endpoint.description or endpoint.endpoint_id


def _warn_failing(endpoint: Endpoint, cause: TaskRun, now_ms: int) -> None:
    count(ENDPOINTS_FAILING)
    notifications.record(
        endpoint.app_id,
        NotificationKind.ENDPOINT_FAILING,
        f"Endpoint failing: {_name(endpoint)}",
        "A run to this endpoint failed after its last success. It is disabled if "
        f"{endpoint.disable_after_failures} runs in a row fail over {endpoint.disable_after_sec} s.",
        _facts(endpoint),
        now_ms,
    )
    operational_events.publish(
        endpoint.app_id, OperationalEvent.ENDPOINT_FAILING, _facts(endpoint), now_ms, cause=cause
    )
    logger.warning("endpoint failing", extra={"endpoint_id": endpoint.endpoint_id})


def _announce_disabled(endpoint: Endpoint, cause: TaskRun, now_ms: int) -> None:
    count(ENDPOINTS_DISABLED)
    facts = {**_facts(endpoint), "disabled_reason": str(endpoint.disabled_reason)}
    message = (
        f"{endpoint.health.consecutive_failures} runs in a row failed since {facts['failing_since']}, "
        "so the endpoint was disabled. Its new runs become dead letters; fix the receiver, then "
        'PATCH {"active": true} and replay or recover them.'
    )
    notifications.record(
        endpoint.app_id,
        NotificationKind.ENDPOINT_DISABLED,
        f"Endpoint disabled: {_name(endpoint)}",
        message,
        facts,
        now_ms,
    )
    notifications.publish_alert(
        f"EdgeCron endpoint disabled: {_name(endpoint)}",
        {"app_id": endpoint.app_id, "kind": NotificationKind.ENDPOINT_DISABLED, **facts},
    )
    operational_events.publish(
        endpoint.app_id, OperationalEvent.ENDPOINT_DISABLED, facts, now_ms, cause=cause
    )
    logger.warning("endpoint disabled for failing", extra={"endpoint_id": endpoint.endpoint_id})
