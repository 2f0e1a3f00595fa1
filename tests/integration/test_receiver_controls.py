"""What a receiver can tell EdgeCron through its answers: `edgecron-retry: stop` on a failure ends the
run's retries at once (real HTTP to a receiver on 127.0.0.1)."""

from __future__ import annotations

from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump


def endpoint_with_five_attempts(key: str, url: str) -> str:
    policy = call_api(
        "POST",
        "/v1/retry-policies",
        key=key,
        body={"strategy": "fixed", "max_attempts": 5, "base_delay_sec": 1, "max_delay_sec": 5},
    )
    assert policy.status == 201, policy.body
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": url, "retry_policy_id": policy.body["id"]})
    assert ep.status == 201, ep.body
    return str(ep.body["id"])


def run_to(key: str, endpoint_id: str) -> str:
    resp = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def test_stop_on_a_503_fails_the_run_after_one_attempt(app_key: str, receiver: Receiver, pump: Pump) -> None:
    receiver.script("/stop", Reply(503, b"gone for good", headers={"edgecron-retry": "stop"}), Reply(200))
    run_id = run_to(app_key, endpoint_with_five_attempts(app_key, receiver.url("/stop")))
    pump.deliveries(quiet_for=2.5)
    run = call_api("GET", f"/v1/task-runs/{run_id}", key=app_key).body
    assert run["status"] == "failed", run
    assert run["attempt_count"] == 1
    assert run["last_error_kind"] == "receiver_stopped"
    assert run["last_error"].startswith("receiver asked to stop retrying (edgecron-retry: stop): HTTP 503")
    attempts = call_api("GET", f"/v1/task-runs/{run_id}/attempts", key=app_key).body["data"]
    assert [(a["status_code"], a["error_kind"], a["outcome"]) for a in attempts] == [
        (503, "receiver_stopped", "failed")
    ]
    assert len(receiver.received("/stop")) == 1


def test_a_garbled_directive_leaves_the_retries_to_the_policy(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    receiver.script("/later", Reply(503, headers={"edgecron-retry": "stop please"}), Reply(200))
    run_id = run_to(app_key, endpoint_with_five_attempts(app_key, receiver.url("/later")))
    pump.deliveries(quiet_for=2.5)
    run = call_api("GET", f"/v1/task-runs/{run_id}", key=app_key).body
    assert run["status"] == "success" and run["attempt_count"] == 2, run
