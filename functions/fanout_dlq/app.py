"""Fan-out DLQ function: fan-out pages SQS gave up on → their Event is marked failed (re-drivable),
their Fire settles FAILED."""

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron.observability import logger, metrics, tracer
from edgecron.schemas.messages import FanoutDeadLetter, receive_count
from edgecron.services.fanout import handle_dead_letter

# Any body parses (one that is not a message stays text), so no record fails for its body.
processor = BatchProcessor(event_type=EventType.SQS, model=FanoutDeadLetter)


def record_handler(record: FanoutDeadLetter) -> str:
    return handle_dead_letter(record.body, receive_count(record))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
