"""DLQ function: messages SQS gave up on (poison, crashing worker) → their runs become dead letters."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron.observability import logger, metrics, tracer
from edgecron.schemas.sqs import DeliveryDeadLetter, receive_count
from edgecron.services.dead_letters import handle_poison
from edgecron.sqs_batch import BatchResponse, process_batch


def record_handler(record: DeliveryDeadLetter) -> str:
    """Any body parses (one that is not a message stays text), so no record fails for its body."""
    return handle_poison(record.body, receive_count(record))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> BatchResponse:
    return process_batch(event, DeliveryDeadLetter, record_handler)
