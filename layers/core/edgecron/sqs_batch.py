"""Partial batch responses: how every function that reads an SQS queue handles a batch of records.

Each record is validated by the queue's record model (edgecron.schemas.sqs), then handed to the
function's handler. A record whose body does not parse, or whose handler raises, fails alone: its
message id is reported in `batchItemFailures` (the event source mappings have
ReportBatchItemFailures), so SQS hands that message out again (and, after its receive limit, moves it
to the queue's DLQ) while it deletes the others. When every record of a batch fails, the invocation
itself fails (`BatchFailed`), as Lambda counts a function error, and SQS hands the whole batch out
again.

With an executor (the worker's threads), the records of a batch are handled concurrently, each in a
copy of the caller's context (its context variables: the invocation's deadline, its shared reads);
the failures are still reported in the order of the records.

These are the rules of Powertools' batch utility with a pydantic model, which the functions used
before: it imports asyncio and the data classes of every event source it supports, a tenth of a
second of a consumer's cold start for the four lines of bookkeeping below."""

from __future__ import annotations

import contextvars
import logging
import traceback
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from pydantic import BaseModel

if TYPE_CHECKING:
    from concurrent.futures import Executor

log = logging.getLogger(__name__)


class ItemFailure(TypedDict):
    itemIdentifier: str  # the SQS message id


class BatchResponse(TypedDict):
    """What a function answers the SQS event source mapping: the records to hand out again."""

    batchItemFailures: list[ItemFailure]


class BatchFailed(Exception):
    """Every record of the batch failed; the message lists each record's error with its traceback."""

    def __init__(self, errors: list[Exception]) -> None:
        super().__init__(f"All {len(errors)} records of the batch failed")
        self.errors = errors

    def __str__(self) -> str:
        return "\n".join([super().__str__(), *("".join(traceback.format_exception(e)) for e in self.errors)])


def process_batch[M: BaseModel](
    event: Mapping[str, Any],
    model: type[M],
    handler: Callable[[M], object],
    *,
    executor: Executor | None = None,
) -> BatchResponse:
    """Validate each record of an SQS event with `model` and hand it to `handler` (on `executor`'s
    threads when given); the records that failed, or BatchFailed when all of them did."""
    records = event.get("Records")
    if not isinstance(records, list):
        raise ValueError("not an SQS event: it has no list of Records")
    errors: list[Exception | None] = []
    if executor is None:
        for record in records:
            errors.append(_attempt(record, model, handler))
    else:
        pending = [
            executor.submit(contextvars.copy_context().run, _attempt, record, model, handler)
            for record in records
        ]
        errors = [future.result() for future in pending]
    failed = [error for error in errors if error is not None]
    if records and len(failed) == len(records):
        raise BatchFailed(failed)
    return {
        "batchItemFailures": [
            {"itemIdentifier": str(record.get("messageId", ""))}
            for record, error in zip(records, errors, strict=True)
            if error is not None
        ]
    }


def _attempt[M: BaseModel](
    record: Mapping[str, Any], model: type[M], handler: Callable[[M], object]
) -> Exception | None:
    """Handle one record; the exception that failed it, if any."""
    try:
        handler(model.model_validate(record))
    except Exception as exc:
        log.debug("record %s failed: %r", record.get("messageId"), exc)
        return exc
    return None
