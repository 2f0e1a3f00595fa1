"""The deploy custom resource: Create and Update run the catch-up, Delete does nothing, and
CloudFormation always gets an answer at the ResponseURL, failures included."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from edgecron.services import compensation
from edgecron_testing.harness import invoke, load_event
from edgecron_testing.receiver import Receiver


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


def test_a_failing_catch_up_still_answers_failed(cfn: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("DynamoDB unavailable")

    monkeypatch.setattr(compensation, "dispatch_schedules", broken)
    event = load_event("cfn-update.json") | {"ResponseURL": cfn.url("/cfn-response")}
    result = invoke("compensation", event)
    answer = answer_of(cfn)
    assert result["Status"] == "FAILED" and answer["Status"] == "FAILED"
    assert "DynamoDB unavailable" in str(answer["Reason"])
