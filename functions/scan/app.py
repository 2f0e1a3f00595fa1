"""Scan function: EventBridge every minute → dispatch due fires, retries and delayed runs."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron import clock
from edgecron.observability import logger, metrics, tracer
from edgecron.services.scan import run_scan


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    rebuild = bool((event.get("detail") or {}).get("rebuild"))
    report = run_scan(clock.now(), rebuild=rebuild, remaining_ms=context.get_remaining_time_in_millis)
    return {
        "runs_checked": report.runs_checked,
        "runs_enqueued": report.runs_enqueued,
        "claims_released": report.claims_released,
        **report.extra,
        "item_failures": report.item_failures,
        "unfinished": report.unfinished,
        "duration_ms": report.duration_ms,
    }
