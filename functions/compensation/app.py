"""Compensation function: the deploy custom resource → catch-up of missed fires; always answers."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron.observability import logger, metrics, tracer
from edgecron.services.compensation import CfnAnswer, handle, respond


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    physical_id = (
        event.get("PhysicalResourceId") or f"edgecron-compensation-{event.get('LogicalResourceId', 'x')}"
    )
    try:
        answer = handle(event, context.get_remaining_time_in_millis())
    except Exception as exc:  # handle() never raises, but CloudFormation must hear back whatever happens
        answer = CfnAnswer("FAILED", f"unexpected error: {type(exc).__name__}", {})
    sent = respond(event, answer, physical_id)
    return {"Status": answer.status, "Reason": answer.reason, "sent": sent}
