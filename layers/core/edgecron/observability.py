"""One Logger, Tracer and Metrics for every function (Powertools; EMF metrics).

The Tracer exists only where tracing is on (a deployed function with `Tracing: Active`): building one
imports the X-Ray SDK and botocore's documentation machinery, a tenth of a second of every cold
start, which a function whose tracing is off (the local stack, the tests, POWERTOOLS_TRACE_DISABLED)
would pay for a tracer that records nothing. There `tracer` is `Untraced`, whose decorators leave the
handler as it is, which is what a disabled Tracer amounts to."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

_TRUTHY = {"1", "y", "yes", "t", "true", "on"}


def tracing_enabled(environ: dict[str, str] | None = None) -> bool:
    """Whether Powertools' Tracer would trace here: inside Lambda (LAMBDA_TASK_ROOT), not under an
    emulator (AWS_SAM_LOCAL, AWS_CHALICE_CLI_MODE), and not disabled by POWERTOOLS_TRACE_DISABLED."""
    env = os.environ if environ is None else environ
    if env.get("POWERTOOLS_TRACE_DISABLED", "false").strip().lower() in _TRUTHY:
        return False
    return (
        bool(env.get("LAMBDA_TASK_ROOT"))
        and not env.get("AWS_SAM_LOCAL")
        and not env.get("AWS_CHALICE_CLI_MODE")
    )


class Untraced:
    """The tracer of a function whose tracing is off: its decorators return the handler unchanged."""

    def capture_lambda_handler(
        self,
        lambda_handler: Callable[..., Any] | None = None,
        capture_response: bool | None = None,
        capture_error: bool | None = None,
    ) -> Callable[..., Any]:
        if lambda_handler is None:
            return lambda handler: handler
        return lambda_handler


def _tracer() -> Tracer | Untraced:
    if not tracing_enabled():
        return Untraced()
    from aws_lambda_powertools import Tracer

    return Tracer(service="edgecron")


logger = Logger(service="edgecron")
tracer = _tracer()
metrics = Metrics(namespace="EdgeCron", service="edgecron")

# Metric names are a contract with the dashboard in template.yaml (a test compares both).
DELIVERY_SUCCEEDED = "DeliverySucceeded"
DELIVERY_FAILED = "DeliveryFailed"
RETRY_SCHEDULED = "RetryScheduled"
DEAD_LETTERED = "DeadLettered"
ATTEMPTS_LOST = "AttemptsLost"  # a worker died mid-attempt; the next claim recorded it
ATTEMPT_LATENCY_MS = "AttemptLatencyMs"
FIRE_LAG_MS = "FireLagMs"
FIRES = "Fires"
MISSED_FIRES = "MissedFires"
SCAN_DURATION_MS = "ScanDurationMs"
SCAN_ITEM_FAILURES = "ScanItemFailures"  # a schedule, run or Fire the scan could not handle this tick
DUE_SCHEDULES = "DueSchedules"
AUTO_PAUSED = "AutoPaused"
ENDPOINTS_FAILING = "EndpointsFailing"  # a healthy Endpoint's run failed (warned at most hourly)
ENDPOINTS_DISABLED = "EndpointsDisabled"  # an Endpoint failed long enough to be disabled
BILLABLE_TRIGGERS = "BillableTriggers"
ALERT_PUBLISH_FAILED = "AlertPublishFailed"  # an SNS alert that could not be published
ENQUEUE_FAILED = "EnqueueFailed"  # delivery messages SQS did not take (the scan sends them again)
STORED_ITEMS_UNREADABLE = "StoredItemsUnreadable"  # items this release cannot read, left out or refused


def count(name: str, value: float = 1) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def millis(name: str, value: float) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=value)
