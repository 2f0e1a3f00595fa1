"""Worker function: SQS delivery/retry messages → one attempt each, the records of a batch concurrently."""

import asyncio
import contextvars
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    EventType,
    async_process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron.observability import logger, metrics, tracer
from edgecron.schemas.messages import DeliveryRecord
from edgecron.services import http_sender  # noqa: F401  (see below)
from edgecron.services.delivery import DeliveryBatch, deliver
from edgecron.services.usage import counting_batch

# Every invocation sends: the HTTP client, which edgecron.services.delivery imports when it first sends
# (so that the scan, which imports it too, does not), is imported above, with the function.
# A body that does not parse fails its record alone, until SQS moves it to the DLQ.
processor = AsyncBatchProcessor(event_type=EventType.SQS, model=DeliveryRecord)
# One thread per record of a full batch: asyncio's default executor has only cpu_count + 4 threads
# (6 on a 2-vCPU function), which would serialize a batch of 10 slow endpoints into two rounds.
deliveries = ThreadPoolExecutor(max_workers=10, thread_name_prefix="delivery")
# This invocation's deadline (time.monotonic()): no attempt of the batch may outlive it. A context
# variable, so concurrent invocations in one process (the local stack) keep their own.
_ends_by: contextvars.ContextVar[float] = contextvars.ContextVar("ends_by", default=0.0)
# The reads this invocation's deliveries share (an Endpoint several runs of the batch name is read
# once); a new one per invocation, so no edit waits for a container to be recycled.
_batch: contextvars.ContextVar[DeliveryBatch | None] = contextvars.ContextVar("batch", default=None)


async def record_handler(record: DeliveryRecord) -> str:
    message = record.body
    ends_by = _ends_by.get()
    # The executor's threads do not inherit context variables: carry the invocation's into each one.
    context = contextvars.copy_context()
    report = await asyncio.get_running_loop().run_in_executor(
        deliveries, context.run, deliver, message.run_id, message.app_id, ends_by, _batch.get()
    )
    return report.outcome


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    _ends_by.set(time.monotonic() + context.get_remaining_time_in_millis() / 1000)
    _batch.set(DeliveryBatch())
    with counting_batch():  # one usage ADD per App and month for the direct runs the batch claims
        return async_process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
