"""Endpoint health on the local stack, over real HTTP: a receiver that keeps failing gets its Endpoint
disabled (notifications for failing and disabled), a run for it is parked as a dead letter without
a request, and a re-enable plus a replay delivers it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver, Reply

pytestmark = pytest.mark.e2e


def wait_endpoint(
    api: Api, endpoint_id: str, done: Callable[[dict[str, Any]], bool], timeout: float = 15.0
) -> dict[str, Any]:
    """The Endpoint once `done` holds: health is written just after the run's result, so a client
    that saw the run finish may read the Endpoint a moment before its health moved."""
    deadline = time.monotonic() + timeout
    while True:
        got = dict(api.ok("GET", f"/v1/endpoints/{endpoint_id}"))
        if done(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def test_a_failing_endpoint_is_disabled_parks_runs_and_comes_back(
    local_stack: LocalStackProcess, receiver: Receiver
) -> None:
    api = Api(local_stack.api_url, local_stack.api_key)
    receiver.script("/down", Reply(500))
    policy = api.ok("POST", "/v1/retry-policies", {"max_attempts": 1})["id"]
    ep = api.ok(
        "POST",
        "/v1/endpoints",
        {
            "url": receiver.url("/down"),
            "retry_policy_id": policy,
            "disable_after_failures": 2,
            "disable_after_sec": 0,
            "description": "e2e health",
        },
    )
    for _ in range(2):
        run = api.ok("POST", "/v1/task-runs", {"endpoint_id": ep["id"]})
        assert api.wait_run(run["id"], terminal)["status"] == "dead_letter"
    disabled = wait_endpoint(api, ep["id"], lambda e: not e["active"])
    assert (disabled["active"], disabled["disabled_reason"], disabled["health"]["state"]) == (
        False,
        "failing",
        "disabled",
    )
    deadline = time.monotonic() + 15
    while True:  # the notification follows the disable
        kinds = [n["kind"] for n in api.ok("GET", "/v1/notifications")["data"]]
        if "ENDPOINT_DISABLED" in kinds or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert kinds[:2] == ["ENDPOINT_DISABLED", "ENDPOINT_FAILING"], kinds

    parked = api.ok("POST", "/v1/task-runs", {"endpoint_id": ep["id"]})
    final = api.wait_run(parked["id"], terminal)
    assert (final["status"], final["last_error_kind"]) == ("dead_letter", "endpoint_disabled")
    assert len(receiver.received("/down")) == 2

    receiver.script("/down", Reply(200))
    enabled = api.ok("PATCH", f"/v1/endpoints/{ep['id']}", {"active": True})
    assert enabled["health"]["state"] == "healthy" and enabled["health"]["consecutive_failures"] == 0
    api.ok("POST", f"/v1/dead-letters/{parked['id']}/replay")
    assert api.wait_run(parked["id"], lambda r: r["status"] == "success")["status"] == "success"
    assert len(receiver.received("/down")) == 3
