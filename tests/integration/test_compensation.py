"""The deploy custom resource: Create and Update run the catch-up, Delete does nothing, and
CloudFormation always gets an answer at the ResponseURL, failures included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from edgecron import clock
from edgecron.data import fires as fire_data
from edgecron.data import schedules as schedule_data
from edgecron.services.fires import due_walk
from edgecron_testing.harness import call_api, invoke, load_event
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import Pump, drain_queues, new_app


@pytest.fixture
def cfn() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def answer_of(cfn: Receiver) -> dict[str, object]:
    [request] = cfn.received("/cfn-response")
    assert request.method == "PUT"
    return dict(json.loads(request.body))


@pytest.mark.parametrize("name", ["cfn-create.json", "cfn-update.json", "cfn-delete.json"])
def test_each_request_type_is_answered_success(cfn: Receiver, name: str) -> None:
    event = load_event(name) | {"ResponseURL": cfn.url("/cfn-response")}
    result = invoke("compensation", event)
    answer = answer_of(cfn)
    assert result["Status"] == "SUCCESS" and result["sent"] is True
    assert answer["Status"] == "SUCCESS"
    assert answer["RequestId"] == event["RequestId"] and answer["StackId"] == event["StackId"]
    assert answer["LogicalResourceId"] == "DeployCompensation" and answer["PhysicalResourceId"]
    if event["RequestType"] == "Delete":
        assert answer["Data"] == {}
        assert answer["PhysicalResourceId"] == event["PhysicalResourceId"]
    else:
        assert "catch_ups" in answer["Data"]  # the catch-up ran


def test_the_answer_is_a_put_of_json_with_the_empty_content_type_a_presigned_url_is_signed_for(
    cfn: Receiver,
) -> None:
    invoke("compensation", load_event("cfn-delete.json") | {"ResponseURL": cfn.url("/cfn-response")})
    [request] = cfn.received("/cfn-response")
    assert request.method == "PUT" and request.headers.get("content-type") == ""
    assert int(request.headers["content-length"]) == len(request.body) > 0


def test_an_unreachable_response_url_is_tried_three_times_then_reported_unsent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from edgecron.services import compensation

    waits: list[float] = []
    monkeypatch.setattr(compensation.time, "sleep", waits.append)
    event = load_event("cfn-delete.json") | {"ResponseURL": "http://127.0.0.1:9/nobody"}
    result = invoke("compensation", event)
    assert result["Status"] == "SUCCESS" and result["sent"] is False
    assert waits == [0.5, 1.0, 1.5]


def test_a_failing_catch_up_still_answers_failed(cfn: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("DynamoDB unavailable")

    monkeypatch.setattr(due_walk, "dispatch_schedules", broken)
    event = load_event("cfn-update.json") | {"ResponseURL": cfn.url("/cfn-response")}
    result = invoke("compensation", event)
    answer = answer_of(cfn)
    assert result["Status"] == "FAILED" and answer["Status"] == "FAILED"
    assert "DynamoDB unavailable" in str(answer["Reason"])


def test_the_deploy_catch_up_hands_a_due_broadcast_fire_to_the_fan_out(cfn: Receiver, pump: Pump) -> None:
    """A schedule bound to every Endpoint, due within the look-ahead at deploy time: the catch-up
    creates its Fire and sends the fan-out its first page."""
    fixed = clock.FixedClock(datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC))
    clock.set_clock(fixed)
    app_id, key = new_app("compensation-broadcast")
    call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/deploy"})
    schedule_id = call_api("POST", "/v1/schedules", key=key, body={"cron": "0 0 1 1 *"}).body["id"]
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.next_fire_at is not None
    fire_at = int(stored.next_fire_at)
    fixed.set(datetime.fromtimestamp(fire_at / 1000, UTC) - timedelta(seconds=30))
    result = invoke("compensation", load_event("cfn-update.json") | {"ResponseURL": cfn.url("/cfn-response")})
    assert result["Status"] == "SUCCESS"
    fire = fire_data.get(schedule_id, fire_at)
    assert fire is not None and fire.paged
    assert pump.once("FanoutQueue", "fanout", batch=1) == 1  # the Fire's first page
    drain_queues()
