"""Delivery end to end on the local stack: real HTTP to receivers on 127.0.0.1, retries with real
delays, dead letters and replay, cancel, signatures verified by the standardwebhooks library."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import boto3
import pytest
from standardwebhooks.webhooks import Webhook

from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver, Reply


@pytest.fixture(scope="module")
def api(local_stack: LocalStackProcess) -> Api:
    return Api(local_stack.api_url, local_stack.api_key)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(scope="module")
def fast_policy(api: Api) -> str:
    body = {"strategy": "fixed", "max_attempts": 3, "base_delay_sec": 1, "max_delay_sec": 5}
    return str(api.ok("POST", "/v1/retry-policies", body)["id"])


def endpoint(api: Api, url: str, **extra: Any) -> dict[str, Any]:
    return dict(api.ok("POST", "/v1/endpoints", {"url": url, **extra}))


def run(api: Api, endpoint_id: str, **extra: Any) -> dict[str, Any]:
    return dict(api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint_id, **extra}))


def attempts(api: Api, run_id: str) -> list[dict[str, Any]]:
    return list(api.ok("GET", f"/v1/task-runs/{run_id}/attempts")["data"])


def test_200_one_signed_attempt(api: Api, receiver: Receiver) -> None:
    ep = endpoint(api, receiver.url("/ok"))
    r = run(api, ep["id"], payload={"n": 1})
    final = api.wait_run(r["id"], terminal)
    assert final["status"] == "success" and final["attempt_count"] == 1
    [request] = receiver.received("/ok")
    Webhook(ep["secret"]).verify(request.body, request.headers)
    assert json.loads(request.body) == {"n": 1} and request.headers["webhook-id"] == r["id"]


def test_500_500_200_three_attempts(api: Api, receiver: Receiver, fast_policy: str) -> None:
    receiver.script("/flaky", Reply(500), Reply(500), Reply(200))
    ep = endpoint(api, receiver.url("/flaky"), retry_policy_id=fast_policy)
    r = run(api, ep["id"])
    final = api.wait_run(r["id"], terminal)
    assert final["status"] == "success"
    assert [(a["attempt_number"], a["status_code"]) for a in attempts(api, r["id"])] == [
        (1, 500),
        (2, 500),
        (3, 200),
    ]
    got = receiver.received("/flaky")
    assert {g.headers["webhook-id"] for g in got} == {r["id"]}
    for g in got:
        Webhook(ep["secret"]).verify(g.body, g.headers)
    for earlier, later in itertools.pairwise(got):
        assert 0.9 <= later.at - earlier.at < 3.0  # the 1 s backoff, on time (within 2 s)


def test_400_terminal_after_one(api: Api, receiver: Receiver, fast_policy: str) -> None:
    receiver.script("/bad", Reply(400))
    ep = endpoint(api, receiver.url("/bad"), retry_policy_id=fast_policy)
    final = api.wait_run(run(api, ep["id"])["id"], terminal)
    assert final["status"] == "failed" and final["attempt_count"] == 1


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_429_with_retry_after_is_retried(api: Api, receiver: Receiver, fast_policy: str, form: str) -> None:
    value = (
        "1" if form == "seconds" else format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    )
    receiver.script("/busy", Reply(429, headers={"Retry-After": value}), Reply(200))
    ep = endpoint(api, receiver.url("/busy"), retry_policy_id=fast_policy)
    final = api.wait_run(run(api, ep["id"])["id"], terminal)
    first, second = receiver.received("/busy")
    assert final["status"] == "success" and second.at - first.at >= 0.9


def test_429_without_retry_after_is_terminal(api: Api, receiver: Receiver, fast_policy: str) -> None:
    receiver.script("/busy2", Reply(429))
    ep = endpoint(api, receiver.url("/busy2"), retry_policy_id=fast_policy)
    final = api.wait_run(run(api, ep["id"])["id"], terminal)
    assert final["status"] == "failed" and final["attempt_count"] == 1


def test_timeout_then_success(api: Api, receiver: Receiver, fast_policy: str) -> None:
    receiver.script("/slow", Reply(200, delay_sec=1.5), Reply(200))
    ep = endpoint(api, receiver.url("/slow"), timeout_ms=500, retry_policy_id=fast_policy)
    r = run(api, ep["id"])
    final = api.wait_run(r["id"], terminal)
    first = attempts(api, r["id"])[0]
    assert first["error_kind"] == "timeout" and final["status"] == "success"


def test_exhaustion_dead_letter_replay_success(api: Api, receiver: Receiver) -> None:
    policy = api.ok(
        "POST", "/v1/retry-policies", {"max_attempts": 2, "base_delay_sec": 1, "max_delay_sec": 2}
    )
    receiver.script("/down", Reply(503), Reply(503), Reply(200))
    ep = endpoint(api, receiver.url("/down"), retry_policy_id=policy["id"])
    r = run(api, ep["id"])
    dead = api.wait_run(r["id"], terminal)
    assert dead["status"] == "dead_letter"
    deadline = time.monotonic() + 5  # the list reads the dead-letter index, which lags its table
    while True:
        listed = api.ok("GET", "/v1/dead-letters", endpoint_id=ep["id"])["data"]
        if listed or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert [d["id"] for d in listed] == [r["id"]]
    api.ok("POST", f"/v1/dead-letters/{r['id']}/replay")
    final = api.wait_run(r["id"], lambda x: x["status"] == "success")
    assert final["series"] == 2
    assert [(a["series"], a["status_code"]) for a in attempts(api, r["id"])] == [(1, 503), (1, 503), (2, 200)]


def test_cancel_delayed_run_is_never_delivered(api: Api, receiver: Receiver) -> None:
    ep = endpoint(api, receiver.url("/never"))
    r = run(api, ep["id"], delay_sec=2)
    assert api.ok("POST", f"/v1/task-runs/{r['id']}/cancel")["status"] == "cancelled"
    assert receiver.wait_for("/never", 1, timeout=4) == []


def test_same_message_twice_gives_one_attempt(
    api: Api, receiver: Receiver, local_stack: LocalStackProcess
) -> None:
    ep = endpoint(api, receiver.url("/twice"))
    r = run(api, ep["id"], delay_sec=3)
    sqs = boto3.client(
        "sqs",
        endpoint_url=local_stack.aws_endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    url = sqs.get_queue_url(QueueName=next(q for q in _queue_names(sqs) if q.endswith("DeliveryQueue")))[
        "QueueUrl"
    ]
    body = json.dumps({"run_id": r["id"], "app_id": local_stack.app_id})
    for _ in range(2):
        sqs.send_message(QueueUrl=url, MessageBody=body, DelaySeconds=3)
    final = api.wait_run(r["id"], terminal)
    assert final["status"] == "success"
    receiver.wait_for("/twice", 2, timeout=3)
    assert len(receiver.received("/twice")) == 1 and len(attempts(api, r["id"])) == 1


def _queue_names(sqs: Any) -> list[str]:
    return [u.rsplit("/", 1)[1] for u in sqs.list_queues().get("QueueUrls", [])]


def test_signatures_before_and_after_rotation(api: Api, receiver: Receiver) -> None:
    ep = endpoint(api, receiver.url("/sig"))
    api.wait_run(run(api, ep["id"])["id"], terminal)
    rotated = api.ok("POST", f"/v1/endpoints/{ep['id']}/rotate-secret")
    api.wait_run(run(api, ep["id"])["id"], terminal)
    before, after = receiver.received("/sig")
    Webhook(ep["secret"]).verify(before.body, before.headers)
    Webhook(rotated["secret"]).verify(after.body, after.headers)
    Webhook(ep["secret"]).verify(after.body, after.headers)  # the old secret signs for 24 h
