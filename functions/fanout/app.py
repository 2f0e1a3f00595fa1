"""Fan-out function: SQS fan-out messages (BatchSize 1) → one page of an Event's Endpoints each."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron.observability import logger, metrics, tracer
from edgecron.schemas.sqs import FanoutRecord
from edgecron.services.fanout import fan_out
from edgecron.sqs_batch import BatchResponse, process_batch


def record_handler(record: FanoutRecord) -> str:
    """A body that does not parse fails its record, until SQS moves it to the DLQ."""
    return fan_out(record.body).outcome


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> BatchResponse:
    return process_batch(event, FanoutRecord, record_handler)
