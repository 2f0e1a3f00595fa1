"""How a function that reads a queue answers SQS for a batch: the records that failed, by message id,
in the shape the event source mapping reads (`batchItemFailures`), each record failing alone; a batch
whose every record failed fails the invocation."""

from __future__ import annotations

import contextvars
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgecron.schemas.sqs import DeliveryDeadLetter, DeliveryRecord
from edgecron.sqs_batch import BatchFailed, process_batch

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:edgecron-delivery"


def record(message_id: str, body: Any) -> dict[str, Any]:
    """An SQS record as the event source mapping hands it to a function."""
    return {
        "messageId": message_id,
        "receiptHandle": f"rh-{message_id}",
        "body": body if isinstance(body, str) else json.dumps(body),
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1767225600000",
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": "1767225600000",
        },
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "us-east-1",
    }


def run(n: int) -> dict[str, Any]:
    return {"run_id": f"run_{n}", "app_id": "app_a"}


class Handled:
    """A record handler that keeps the runs it was handed, and fails the ones it is told to."""

    def __init__(self, failing: frozenset[str] = frozenset()) -> None:
        self.runs: list[str] = []
        self.failing = failing
        self.lock = threading.Lock()

    def __call__(self, rec: DeliveryRecord) -> str:
        with self.lock:
            self.runs.append(rec.body.run_id)
        if rec.body.run_id in self.failing:
            raise RuntimeError(f"could not deliver {rec.body.run_id}")
        return "delivered"


def test_every_record_handled_is_a_response_without_failures() -> None:
    handled = Handled()
    event = {"Records": [record("m1", run(1)), record("m2", run(2))]}
    assert process_batch(event, DeliveryRecord, handled) == {"batchItemFailures": []}
    assert handled.runs == ["run_1", "run_2"]


@pytest.mark.parametrize(
    "body",
    ["not json", json.dumps({"run_id": "run_2"}), json.dumps({"run_id": 2, "app_id": "app_a"}), "[" * 5000],
)
def test_a_record_whose_body_does_not_parse_fails_alone_and_is_never_handled(body: str) -> None:
    handled = Handled()
    event = {"Records": [record("m1", run(1)), record("m2", body), record("m3", run(3))]}
    assert process_batch(event, DeliveryRecord, handled) == {"batchItemFailures": [{"itemIdentifier": "m2"}]}
    assert handled.runs == ["run_1", "run_3"]


def test_an_exception_in_one_record_fails_that_record_only() -> None:
    handled = Handled(failing=frozenset({"run_2"}))
    event = {"Records": [record("m1", run(1)), record("m2", run(2)), record("m3", run(3))]}
    assert process_batch(event, DeliveryRecord, handled) == {"batchItemFailures": [{"itemIdentifier": "m2"}]}
    assert handled.runs == ["run_1", "run_2", "run_3"]


def test_the_failures_are_listed_in_the_order_of_the_records() -> None:
    handled = Handled(failing=frozenset({"run_3", "run_1"}))
    event = {"Records": [record(f"m{n}", run(n)) for n in (1, 2, 3)] + [record("m4", "{}")]}
    assert process_batch(event, DeliveryRecord, handled) == {
        "batchItemFailures": [{"itemIdentifier": "m1"}, {"itemIdentifier": "m3"}, {"itemIdentifier": "m4"}]
    }


def test_an_empty_batch_is_a_response_without_failures() -> None:
    handled = Handled()
    assert process_batch({"Records": []}, DeliveryRecord, handled) == {"batchItemFailures": []}
    assert handled.runs == []


def test_a_batch_whose_every_record_failed_fails_the_invocation_with_each_error() -> None:
    handled = Handled(failing=frozenset({"run_1"}))
    event = {"Records": [record("m1", run(1)), record("m2", "not json")]}
    with pytest.raises(BatchFailed) as failed:
        process_batch(event, DeliveryRecord, handled)
    assert len(failed.value.errors) == 2
    assert "could not deliver run_1" in str(failed.value) and "Invalid JSON" in str(failed.value)


def test_an_event_that_is_not_an_sqs_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="Records"):
        process_batch({"detail": {}}, DeliveryRecord, Handled())


def test_a_model_that_accepts_any_body_fails_no_record_for_its_body() -> None:
    """The DLQ consumers' records keep a body that is not a message as its text."""
    bodies: list[object] = []
    event = {"Records": [record("m1", "not json"), record("m2", run(2))]}
    assert process_batch(event, DeliveryDeadLetter, lambda rec: bodies.append(rec.body)) == {
        "batchItemFailures": []
    }
    assert bodies[0] == "not json" and getattr(bodies[1], "run_id", None) == "run_2"


def test_with_an_executor_the_records_of_a_batch_are_handled_concurrently_in_the_callers_context() -> None:
    """Three records that each wait for the other two finish only if all three run at once; each sees
    the context variables of the invocation that handed them out."""
    deadline: contextvars.ContextVar[float] = contextvars.ContextVar("deadline", default=0.0)
    together = threading.Barrier(3, timeout=5)
    seen: dict[str, float] = {}

    def handler(rec: DeliveryRecord) -> str:
        together.wait()
        seen[rec.body.run_id] = deadline.get()
        if rec.body.run_id == "run_2":
            raise RuntimeError("refused")
        return "delivered"

    deadline.set(42.0)
    event = {"Records": [record(f"m{n}", run(n)) for n in (1, 2, 3)]}
    with ThreadPoolExecutor(max_workers=3) as executor:
        response = process_batch(event, DeliveryRecord, handler, executor=executor)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m2"}]}
    assert seen == {"run_1": 42.0, "run_2": 42.0, "run_3": 42.0}
