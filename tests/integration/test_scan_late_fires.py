"""The scan's reconcile of schedule runs that never started: a Fire's status follows from what happened
to its runs, a backlog (the message is still queued) is told apart from a lost message, and a worker
that claims a run while the scan applies the missed policy keeps its outcome."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import botocore.client
import pytest

from edgecron import clock
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.models import FireModel, TaskRunModel
from edgecron.services import delivery, scan
from edgecron_testing.harness import call_api
from edgecron_testing.harness import new_endpoint as endpoint
from edgecron_testing.inprocess import app_of_run
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump, app_runs, new_app, queue

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
LATE = timedelta(seconds=240)  # the reconcile looks at an enqueued run ~230 s after its due time


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def fixed() -> clock.FixedClock:
    c = clock.FixedClock(T0)
    clock.set_clock(c)
    return c


def fire_now(key: str, endpoint_ids: list[str], policy: str) -> str:
    """A one-time schedule due at the current (fixed) instant: its runs are enqueued without delay."""
    resp = call_api(
        "POST",
        "/v1/schedules",
        key=key,
        body={"at": clock.now().isoformat(), "endpoint_ids": endpoint_ids, "missed_policy": policy},
    )
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def take_messages() -> dict[str, dict[str, Any]]:
    """Receive every waiting delivery message, keyed by run id (they stay in flight, invisible)."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    got: dict[str, dict[str, Any]] = {}
    while True:
        batch = sqs.receive_message(
            QueueUrl=queue("DeliveryQueue").url, MaxNumberOfMessages=10, VisibilityTimeout=600
        ).get("Messages", [])
        if not batch:
            return got
        for m in batch:
            got[json.loads(m["Body"])["run_id"]] = m


def lose(message: dict[str, Any]) -> None:
    boto3.client("sqs", region_name="us-east-1").delete_message(
        QueueUrl=queue("DeliveryQueue").url, ReceiptHandle=message["ReceiptHandle"]
    )


def the_fire(schedule_id: str) -> FireModel:
    fires = list(FireModel.query(schedule_id, consistent_read=True))
    assert len(fires) == 1
    return fires[0]


def runs_of(app_id: str, schedule_id: str) -> dict[str, TaskRunModel]:
    return {r.endpoint_id: r for r in app_runs(app_id) if r.source_id == schedule_id}


def before_aws_call(monkeypatch: pytest.MonkeyPatch, hook: Callable[[str, dict[str, Any]], None]) -> None:
    """Run `hook(operation, params)` before each AWS call: how a test interleaves another actor's step
    between two calls of the code under test."""
    original = botocore.client.BaseClient._make_api_call

    def call(self: Any, operation: str, params: Any) -> Any:
        hook(operation, params)
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", call)


def test_a_fire_with_a_delivered_run_is_never_missed(fixed: clock.FixedClock, receiver: Receiver) -> None:
    app_id, key = new_app("late-sibling")
    a, b = endpoint(key, receiver.url("/a")), endpoint(key, receiver.url("/b"))
    schedule_id = fire_now(key, [a, b], "SKIP")
    runs = runs_of(app_id, schedule_id)
    messages = take_messages()
    assert delivery.deliver(runs[a].run_id, app_of_run(runs[a].run_id)).outcome == "success"
    lose(messages[runs[b].run_id])  # the sibling's message is lost; nothing else is queued
    fixed.set(T0 + LATE)
    scan.run_scan(fixed.now())
    assert the_fire(schedule_id).status != "MISSED"
    Pump().deliveries()  # the lost sibling is delivered late: the fire happened
    assert len(receiver.received("/a")) == 1 and len(receiver.received("/b")) == 1
    assert the_fire(schedule_id).status == "COMPLETED"


def test_a_backlog_is_delivered_late_not_missed(fixed: clock.FixedClock, receiver: Receiver) -> None:
    app_id, key = new_app("late-backlog")
    ep = endpoint(key, receiver.url("/backlog"))
    schedule_id = fire_now(key, [ep], "SKIP")
    fixed.set(T0 + LATE)  # no worker has taken the message yet: it is still queued
    scan.run_scan(fixed.now())
    assert the_fire(schedule_id).status == "SCHEDULED"
    assert runs_of(app_id, schedule_id)[ep].status == "pending"
    Pump().deliveries()
    assert len(receiver.received("/backlog")) == 1
    assert the_fire(schedule_id).status == "COMPLETED"


def test_a_lost_message_follows_the_missed_policy(fixed: clock.FixedClock, receiver: Receiver) -> None:
    app_id, key = new_app("late-lost")
    ep = endpoint(key, receiver.url("/lost"))
    schedule_id = fire_now(key, [ep], "SKIP")
    lose(take_messages()[runs_of(app_id, schedule_id)[ep].run_id])
    fixed.set(T0 + LATE)
    scan.run_scan(fixed.now())
    fire = the_fire(schedule_id)
    assert fire.status == "MISSED"
    assert runs_of(app_id, schedule_id)[ep].status == "cancelled"
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.finished is True
    Pump().deliveries()
    assert receiver.received("/lost") == []


def test_a_run_claimed_while_the_scan_cancels_keeps_its_fire_and_counts(
    fixed: clock.FixedClock, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id, key = new_app("late-race")
    receiver.script("/race", Reply(400))
    policy = call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 1}).body["id"]
    ep = endpoint(key, receiver.url("/race"), retry_policy_id=policy)
    schedule_id = fire_now(key, [ep], "SKIP")
    run_id = runs_of(app_id, schedule_id)[ep].run_id
    lose(take_messages()[run_id])
    fixed.set(T0 + LATE)
    claimed: list[Any] = []

    def worker_claims_first(operation: str, params: dict[str, Any]) -> None:
        values = json.dumps(params.get("ExpressionAttributeValues", {}))
        cancelling = operation == "UpdateItem" and '"cancelled"' in values
        if cancelling and params.get("Key", {}).get("run_id", {}).get("S") == run_id and not claimed:
            claimed.append(
                run_data.claim(app_of_run(run_id), run_id, clock.to_ms(fixed.now()))
            )  # a worker got there first

    before_aws_call(monkeypatch, worker_claims_first)
    scan.run_scan(fixed.now())
    monkeypatch.undo()
    assert claimed and claimed[0] is not None
    assert the_fire(schedule_id).status == "SCHEDULED"  # its run is in a worker's hands
    fixed.advance(120)  # that worker died; the next one takes the expired claim over and delivers
    assert delivery.deliver(run_id, app_of_run(run_id)).outcome == "failed"
    assert the_fire(schedule_id).status == "FAILED"
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.consecutive_failures == 1  # the outcome counted
