"""Fan-out DLQ function: fan-out pages SQS gave up on → their Event is marked failed (re-drivable),
their Fire settles FAILED."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron.observability import logger, metrics, tracer
from edgecron.schemas.sqs import FanoutDeadLetter, receive_count
from edgecron.services.fanout import handle_dead_letter
from edgecron.sqs_batch import BatchResponse, process_batch


def record_handler(record: FanoutDeadLetter) -> str:
    """Any body parses (one that is not a message stays text), so no record fails for its body."""
    return handle_dead_letter(record.body, receive_count(record))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> BatchResponse:
    return process_batch(event, FanoutDeadLetter, record_handler)
