"""The delivery DLQ consumer: a message SQS gave up on dead-letters its run only when the run is stuck
with it (due and waiting, or claimed by a worker whose claim expired), never a run that a live worker
holds or whose next attempt is already scheduled (the DLQ then holds a stale duplicate)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from edgecron import clock
from edgecron.data import runs as run_data
from edgecron_testing.harness import invoke, sqs_event
from edgecron_testing.inprocess import app_of_run
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump, drain_queues
from tests.integration.test_delivery import attempts, create_run, fast_policy, get_run, make_endpoint

DLQ_ARN = "arn:aws:sqs:us-east-1:123456789012:dlq"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def poison(run_id: object) -> None:
    message = {
        "MessageId": "p1",
        "ReceiptHandle": "p1",
        "Body": json.dumps({"run_id": run_id, "app_id": app_of_run(str(run_id))}),
        "Attributes": {"ApproximateReceiveCount": "5"},
    }
    assert invoke("dlq", sqs_event([message], DLQ_ARN)) == {"batchItemFailures": []}


def _due_run(app_key: str, url: str) -> tuple[clock.FixedClock, str]:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    ep = make_endpoint(app_key, url)
    run_id = str(create_run(app_key, ep["id"])["id"])
    drain_queues()  # the run's own message is gone: only the poison message is left
    return fixed, run_id


def test_a_run_under_a_live_claim_is_not_dead_lettered(app_key: str, receiver: Receiver) -> None:
    fixed, run_id = _due_run(app_key, receiver.url("/live"))
    assert (
        run_data.claim(app_of_run(run_id), run_id, clock.to_ms(fixed.now())) is not None
    )  # a worker is on it
    poison(run_id)
    run = get_run(app_key, run_id)
    assert run["status"] == "running", run


def test_a_run_with_a_retry_scheduled_by_another_message_is_not_dead_lettered(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    receiver.script("/again", Reply(503))
    policy = fast_policy(app_key, attempts=3, base_delay_sec=60, max_delay_sec=60)
    ep = make_endpoint(app_key, receiver.url("/again"), retry_policy_id=policy)
    run = create_run(app_key, ep["id"])
    pump.deliveries()
    assert get_run(app_key, run["id"])["status"] == "retry_scheduled"
    poison(run["id"])
    after = get_run(app_key, run["id"])
    assert after["status"] == "retry_scheduled" and after["last_error_kind"] == "http_5xx", after


def test_a_due_run_stuck_with_its_message_is_dead_lettered(app_key: str, receiver: Receiver) -> None:
    _, run_id = _due_run(app_key, receiver.url("/stuck"))
    poison(run_id)
    run = get_run(app_key, run_id)
    assert run["status"] == "dead_letter" and run["last_error_kind"] == "poison", run
    assert "5 times" in str(run["last_error"])
    assert receiver.received("/stuck") == []


def test_a_run_whose_claim_expired_is_dead_lettered_with_its_lost_attempt(
    app_key: str, receiver: Receiver
) -> None:
    """The worker died holding the run each time: the attempt it made is recorded as lost."""
    fixed, run_id = _due_run(app_key, receiver.url("/died"))
    assert run_data.claim(app_of_run(run_id), run_id, clock.to_ms(fixed.now())) is not None
    fixed.advance(61)  # CLAIM_SEC is 60 in the integration tests
    poison(run_id)
    run = get_run(app_key, run_id)
    assert run["status"] == "dead_letter" and run["last_error_kind"] == "poison", run
    assert [(a["attempt_number"], a["error_kind"]) for a in attempts(app_key, run_id)] == [(1, "worker_lost")]
