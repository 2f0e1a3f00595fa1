"""Hostile SQS message bodies: a body that is not JSON, JSON of the wrong shape, JSON nested deeper
than any parser should follow, or ids no run could have. The consumers of the delivery and fan-out
queues fail such a record (SQS retries it, then moves it to the DLQ) without stopping the rest of
the batch; the DLQ consumers record it as unparseable and let it go, so it never loops."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from edgecron_testing.harness import invoke, sqs_event
from edgecron_testing.inprocess import app_of_run
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import Pump, queue
from tests.integration.test_delivery import create_run, get_run, make_endpoint

DEEP = "[" * 100_000 + "]" * 100_000  # 200 KB, within SQS's message size
HOSTILE = {
    "not_json": "{",
    "not_an_object": "[1, 2]",
    "wrong_types": '{"run_id": 1, "app_id": ["a"]}',
    "missing_field": '{"run_id": "run_x"}',
    "empty_ids": '{"run_id": "", "app_id": ""}',
    "id_no_run_has": json.dumps({"run_id": "run_x\u0000/../y", "app_id": "app_x"}),
    "oversized_id": json.dumps({"run_id": "r" * 100_000, "app_id": "app_x"}),
    "deep": DEEP,
    "deep_inside": '{"run_id": "run_x", "app_id": "app_x", "extra": ' + DEEP + "}",
}
FANOUT_HOSTILE = {
    **HOSTILE,
    "missing_field": '{"event_id": "evt_x"}',
    "wrong_types": '{"event_id": 1, "app_id": "app_x"}',
    "bool_page": '{"event_id": "evt_x", "app_id": "app_x", "cursor": null, "page": true}',
    "negative_fire_at": '{"schedule_id": "sch_x", "app_id": "app_x", "fire_at": -1}',
    "string_until": '{"schedule_id": "sch_x", "app_id": "app_x", "dispatch_until": "5"}',
    "neither_owner": '{"app_id": "app_x", "cursor": null}',
    "unknown_kind": '{"kind": "bogus", "app_id": "app_x", "event_id": "evt_x"}',
    "kind_without_its_fields": '{"kind": "fire_gate", "app_id": "app_x", "event_id": "evt_x"}',
    "kind_not_a_string": '{"kind": 5, "app_id": "app_x", "event_id": "evt_x"}',
}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def records(bodies: dict[str, str], receive_count: int = 1) -> list[dict[str, Any]]:
    return [
        {
            "MessageId": name,
            "ReceiptHandle": name,
            "Body": body,
            "Attributes": {"ApproximateReceiveCount": str(receive_count)},
        }
        for name, body in bodies.items()
    ]


def failed(result: Any) -> set[str]:
    return {f["itemIdentifier"] for f in (result or {}).get("batchItemFailures", [])}


def test_hostile_delivery_messages_fail_alone_and_the_batch_is_delivered(
    app_key: str, receiver: Receiver
) -> None:
    ep = make_endpoint(app_key, receiver.url("/good"))
    run = create_run(app_key, ep["id"])
    good = {"good": json.dumps({"run_id": run["id"], "app_id": app_of_run(str(run["id"]))})}
    for name, body in HOSTILE.items():
        result = invoke("worker", sqs_event(records({name: body, **good}), queue("DeliveryQueue").arn))
        assert failed(result) == {name}, name
    assert get_run(app_key, run["id"])["status"] == "success"
    assert len(receiver.received("/good")) == 1  # the later good copies found the run finished


def test_hostile_messages_in_the_delivery_dlq_are_recorded_and_let_go(pump: Pump) -> None:
    result = invoke("dlq", sqs_event(records(HOSTILE, receive_count=5), queue("DeliveryDLQ").arn))
    assert failed(result) == set()


def test_hostile_fan_out_messages_fail_alone(pump: Pump) -> None:
    gone = {"gone": json.dumps({"event_id": "evt_NOPE", "app_id": "app_NOPE", "cursor": None})}
    for name, body in FANOUT_HOSTILE.items():
        result = invoke("fanout", sqs_event(records({name: body, **gone}), queue("FanoutQueue").arn))
        assert failed(result) == {name}, name


def test_hostile_messages_in_the_fan_out_dlq_are_recorded_and_let_go(pump: Pump) -> None:
    result = invoke("fanout_dlq", sqs_event(records(FANOUT_HOSTILE, receive_count=5), queue("FanoutDLQ").arn))
    assert failed(result) == set()
