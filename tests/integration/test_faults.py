"""The fault-injection facility of the in-process harness does what it says: a call that fails before
its effect leaves nothing, one that fails after it leaves its effect, a killed invocation runs nothing
more, the test's own calls are never faulted, and seeded random faults repeat per seed."""

from __future__ import annotations

import random

import boto3
import pytest

from edgecron_testing import faults
from edgecron_testing.harness import call_api
from edgecron_testing.inprocess import PROVISIONED

BODY = {"url": "http://127.0.0.1:9/x"}


def listed(key: str) -> list[str]:
    return [item["id"] for item in call_api("GET", "/v1/endpoints", key=key).body["data"]]


def test_a_call_failed_before_its_effect_stores_nothing(app_key: str) -> None:
    with faults.Faults() as f:
        f.on(
            "dynamodb",
            kind=faults.BEFORE,
            function="api",
            table="EndpointsTable",
            when=lambda call: call.operation in ("PutItem", "TransactWriteItems"),
        )
        resp = call_api("POST", "/v1/endpoints", key=app_key, body=BODY)
    assert f.count(faults.BEFORE) == 1
    assert resp.status >= 500, resp.body
    assert listed(app_key) == []


def test_a_call_failed_after_its_effect_keeps_its_effect(app_key: str) -> None:
    with faults.Faults() as f:
        f.on(
            "dynamodb",
            kind=faults.AFTER,
            function="api",
            table="EndpointsTable",
            when=lambda call: call.operation in ("PutItem", "TransactWriteItems"),
        )
        resp = call_api("POST", "/v1/endpoints", key=app_key, body=BODY)
    assert f.count(faults.AFTER) == 1
    assert resp.status >= 500 or resp.status == 201, resp.body
    assert len(listed(app_key)) == 1


def test_a_killed_invocation_makes_no_call_after_the_kill(app_key: str) -> None:
    with faults.Faults() as f:
        f.on(
            "dynamodb",
            kind=faults.KILL_AFTER,
            function="api",
            table="EndpointsTable",
            when=lambda call: call.operation in ("PutItem", "TransactWriteItems"),
        )
        with pytest.raises(faults.InvocationKilled):
            call_api("POST", "/v1/endpoints", key=app_key, body=BODY)
    killed = f.injected[0].call
    later = f.calls[f.calls.index(killed) + 1 :]
    assert all(fault.kind == faults.KILL for fault in f.injected[1:])
    assert len(f.injected) == 1 + len(later)  # each later call of the invocation died before its effect
    assert len(listed(app_key)) == 1  # the kill came after the write


def test_the_tests_own_calls_are_never_faulted() -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    with faults.Faults() as f:
        f.on("sqs", kind=faults.BEFORE, times=100)
        got = sqs.get_queue_attributes(QueueUrl=PROVISIONED.queues["DeliveryQueue"].url)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert f.injected == []


def test_the_nth_matching_call_is_the_one_failed(app_key: str) -> None:
    with faults.Faults() as f:
        rule = f.on(kind=faults.BEFORE, function="api", nth=10**6)
        assert call_api("POST", "/v1/endpoints", key=app_key, body=BODY).status == 201
    assert rule.fired == 0 and f.injected == [] and f.calls
    with faults.Faults() as f:
        rule = f.on(kind=faults.BEFORE, function="api", nth=2)
        for _ in range(2):
            call_api("POST", "/v1/endpoints", key=app_key, body=BODY)
    assert rule.fired == 1 and f.injected[0].call is f.calls[1]


def test_random_faults_repeat_per_seed() -> None:
    calls = [faults.Call("dynamodb", f"Op{i % 7}", {}, "worker", f"inv{i // 5}") for i in range(200)]

    def picked(seed: int) -> list[str | None]:
        chaos = faults.Faults()
        chaos.random(random.Random(seed), 0.2)
        assert chaos.chaos is not None
        return [chaos.chaos.pick(call) for call in calls]

    assert picked(7) == picked(7)
    assert picked(7) != picked(8)
    assert set(picked(7)) == {None, *faults.KINDS}
