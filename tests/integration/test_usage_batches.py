"""Direct runs sent at their creation by an App with a quota are counted by their own conditional put
(one transaction with the usage counter), so the quota sees them at once and no worker, dead or
alive, counts them again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from edgecron import clock
from edgecron.services import delivery
from edgecron_testing.harness import call_api, invoke, sqs_event
from edgecron_testing.inprocess import app_of_run, usage_writes
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import ADMIN_KEY, Pump, drain_queues, new_app

DLQ_ARN = "arn:aws:sqs:us-east-1:123456789012:DeliveryDLQ"


class WorkerDied(BaseException):
    """Stands for a Lambda runtime killed mid-invocation: nothing after this point runs."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _app(name: str) -> tuple[str, str]:
    """An App with a quota, far from used up: the quota check reads its counters."""
    app_id, key = new_app(name)
    resp = call_api("PUT", f"/v1/apps/{app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": 1_000_000})
    assert resp.status == 200, resp.body
    return app_id, key


def _endpoint(key: str, url: str) -> str:
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def _create_run(key: str, endpoint_id: str, **extra: object) -> str:
    resp = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id, **extra})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def _direct(key: str) -> int:
    resp = call_api("GET", "/v1/usage", key=key)
    assert resp.status == 200, resp.body
    return int(resp.body["direct"])


def test_direct_runs_of_an_app_with_a_quota_are_counted_by_their_put_and_never_by_the_worker(
    receiver: Receiver, pump: Pump
) -> None:
    app_id, key = _app("usage-batch")
    endpoint_id = _endpoint(key, receiver.url("/batch"))
    for _ in range(10):
        _create_run(key, endpoint_id)
    assert _direct(key) == 10  # in the counter the quota reads before any worker took them
    with usage_writes(app_id) as writes:
        assert pump.once("DeliveryQueue", "worker") == 10
    assert writes.updates == 0
    assert _direct(key) == 10
    assert len(receiver.received("/batch")) == 10


def test_a_direct_run_due_later_is_counted_when_it_is_created(receiver: Receiver, pump: Pump) -> None:
    _, key = _app("usage-later")
    _create_run(key, _endpoint(key, receiver.url("/later")), delay_sec=3_600)
    assert _direct(key) == 1


def test_a_worker_that_dies_before_its_result_leaves_the_run_counted_once(
    receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, key = _app("usage-died-before")
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    run_id = _create_run(key, _endpoint(key, receiver.url("/died-before")))
    drain_queues()

    def die(*_: object, **__: object) -> None:
        raise WorkerDied

    with monkeypatch.context() as patch:  # the worker dies after its HTTP call, before the result
        patch.setattr(delivery.run_data, "finish", die)
        with pytest.raises(WorkerDied):
            delivery.deliver(run_id, app_of_run(run_id))
    assert _direct(key) == 1
    fixed.advance(61)  # its claim expired: the message comes back and another worker takes over
    assert delivery.deliver(run_id, app_of_run(run_id)).outcome == "success"
    assert _direct(key) == 1
    assert len(receiver.received("/died-before")) == 2


def test_a_run_cancelled_before_any_worker_took_it_is_counted_once(receiver: Receiver, pump: Pump) -> None:
    _, key = _app("usage-cancel")
    run_id = _create_run(key, _endpoint(key, receiver.url("/cancel")))
    resp = call_api("POST", f"/v1/task-runs/{run_id}/cancel", key=key)
    assert resp.status == 200, resp.body
    assert _direct(key) == 1
    pump.deliveries()  # its message finds it cancelled
    assert _direct(key) == 1
    assert receiver.received("/cancel") == []


def test_a_dead_lettered_run_no_worker_counted_is_counted_once(receiver: Receiver) -> None:
    app_id, key = _app("usage-poison")
    run_id = _create_run(key, _endpoint(key, receiver.url("/poison")))
    drain_queues()
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "r1",
        "Body": json.dumps({"run_id": run_id, "app_id": app_id}),
        "Attributes": {"ApproximateReceiveCount": "5"},
    }
    assert invoke("dlq", sqs_event([message], DLQ_ARN)) == {"batchItemFailures": []}
    assert call_api("GET", f"/v1/task-runs/{run_id}", key=key).body["status"] == "dead_letter"
    assert _direct(key) == 1
