"""One Logger, Tracer and Metrics for every function (Powertools; EMF metrics)."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

logger = Logger(service="edgecron")
tracer = Tracer(service="edgecron")
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
