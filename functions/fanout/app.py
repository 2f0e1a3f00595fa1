"""Fan-out function: SQS fan-out messages (BatchSize 1) → one page of an Event's Endpoints each."""

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron.observability import logger, metrics, tracer
from edgecron.schemas.messages import FanoutRecord
from edgecron.services.fanout import fan_out

# A body that does not parse fails its record, until SQS moves it to the DLQ.
processor = BatchProcessor(event_type=EventType.SQS, model=FanoutRecord)


def record_handler(record: FanoutRecord) -> str:
    return fan_out(record.body).outcome


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
