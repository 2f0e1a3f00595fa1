"""DLQ function: messages SQS gave up on (poison, crashing worker) → their runs become dead letters."""

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron.observability import logger, metrics, tracer
from edgecron.schemas.messages import DeliveryDeadLetter, receive_count
from edgecron.services.dead_letters import handle_poison

# Any body parses (one that is not a message stays text), so no record fails for its body.
processor = BatchProcessor(event_type=EventType.SQS, model=DeliveryDeadLetter)


def record_handler(record: DeliveryDeadLetter) -> str:
    return handle_poison(record.body, receive_count(record))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
