"""Worker function: SQS delivery/retry messages → one attempt each, the records of a batch concurrently."""

import contextvars
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from cryptography.hazmat.primitives.ciphers import aead  # noqa: F401  (see below)

from edgecron.observability import logger, metrics, tracer
from edgecron.schemas.sqs import DeliveryRecord
from edgecron.services import http_sender  # noqa: F401  (see below)
from edgecron.services.delivery import DeliveryBatch, deliver
from edgecron.services.usage import counting_batch
from edgecron.sqs_batch import BatchResponse, process_batch

# Every invocation sends and signs: the HTTP client and the signing secrets' cipher, which the delivery
# service imports when it first sends and opens a secret (so that the scan and the DLQ consumers, which
# import it too, do not), are imported above, with the function.
# A body that does not parse fails its record alone, until SQS moves it to the DLQ.
# One thread per record of a full batch (BatchSize 10): a batch of 10 slow endpoints is one round.
deliveries = ThreadPoolExecutor(max_workers=10, thread_name_prefix="delivery")
# This invocation's deadline (time.monotonic()): no attempt of the batch may outlive it. A context
# variable, so concurrent invocations in one process (the local stack) keep their own; each record's
# thread runs in a copy of the invocation's context.
_ends_by: contextvars.ContextVar[float] = contextvars.ContextVar("ends_by", default=0.0)
# The reads this invocation's deliveries share (an Endpoint several runs of the batch name is read
# once); a new one per invocation, so no edit waits for a container to be recycled.
_batch: contextvars.ContextVar[DeliveryBatch | None] = contextvars.ContextVar("batch", default=None)


def record_handler(record: DeliveryRecord) -> str:
    message = record.body
    return deliver(message.run_id, message.app_id, _ends_by.get(), _batch.get()).outcome


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> BatchResponse:
    _ends_by.set(time.monotonic() + context.get_remaining_time_in_millis() / 1000)
    _batch.set(DeliveryBatch())
    with counting_batch():  # one usage ADD per App and month for the direct runs the batch claims
        return process_batch(event, DeliveryRecord, record_handler, executor=deliveries)
