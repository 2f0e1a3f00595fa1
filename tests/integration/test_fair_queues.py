"""Fairness between Apps in the queues: every delivery and fan-out message names its App as its
message group, which makes the standard queues SQS fair queues with the App as the tenant (SQS then
hands out a quiet App's messages before a noisy one's backlog; moto keeps standard-queue order, so
what is checked here is what the queues are told). A message of one App never carries another's
group, whichever path sent it: a direct run sent at creation, a retry, an Event's fan-out page and
its runs, a schedule's fire."""

from __future__ import annotations

import json
from typing import Any

from edgecron_testing import faults
from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump, new_app, queue


def _messages(pump: Pump, logical_id: str) -> list[tuple[str, str]]:
    """(the body's App, the message's group) of every message the queue holds now, left in place."""
    info = queue(logical_id)
    got: list[dict[str, Any]] = []
    while batch := pump.sqs.receive_message(
        QueueUrl=info.url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
    ).get("Messages", []):
        got += batch
    for m in got:  # visible again, for the consumers
        pump.sqs.change_message_visibility(
            QueueUrl=info.url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
        )
    pairs = {
        m["MessageId"]: (json.loads(m["Body"])["app_id"], m["Attributes"].get("MessageGroupId", ""))
        for m in got
    }
    return sorted(pairs.values())


def test_every_message_of_an_app_names_that_app_as_its_group(receiver: Receiver, pump: Pump) -> None:
    apps = [new_app("fair-a"), new_app("fair-b")]
    receiver.script("/fair-fails", Reply(500))
    for _, key in apps:
        body = {"url": receiver.url("/fair"), "filter_events": ["*"]}
        ok = call_api("POST", "/v1/endpoints", key=key, body=body).body["id"]
        failing = call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url("/fair-fails")}).body[
            "id"
        ]
        for endpoint_id in (ok, failing):
            resp = call_api(
                "POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id, "payload": {}}
            )
            assert resp.status == 201, resp.body
        resp = call_api("POST", "/v1/events", key=key, body={"name": "order.paid", "payload": {}})
        assert resp.status == 202, resp.body
    fanout = _messages(pump, "FanoutQueue")
    assert {app for app, _ in fanout} == {app_id for app_id, _ in apps}
    assert all(app == group for app, group in fanout), fanout
    while pump.once("FanoutQueue", "fanout"):
        pass
    deliveries = _messages(pump, "DeliveryQueue")
    assert len(deliveries) == 6  # per App: two direct runs, and the Event's run at the subscribed Endpoint
    assert all(app == group for app, group in deliveries), deliveries
    while pump.once("DeliveryQueue", "worker"):
        pass
    assert faults.let_sqs_time_pass() == 2  # the failing Endpoint's runs wait for their retry
    retries = _messages(pump, "DeliveryQueue")
    assert len(retries) == 2 and all(app == group for app, group in retries), retries
