"""Operational events on the local stack: a dead letter reaches the Endpoint subscribed to
`edgecron.*`, signed and verified by the standardwebhooks library, and not the one taking `*`."""

from __future__ import annotations

import json
import time

import pytest
from standardwebhooks.webhooks import Webhook

from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver, Reply

pytestmark = pytest.mark.e2e


def test_a_dead_letter_is_announced_to_the_operational_subscriber(
    local_stack: LocalStackProcess, receiver: Receiver
) -> None:
    api = Api(local_stack.api_url, local_stack.api_key)
    receiver.script("/down", Reply(503))
    ops = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/ops"), "filter_events": ["edgecron.run.*"]})
    everything = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/all"), "filter_events": ["*"]})
    policy = api.ok("POST", "/v1/retry-policies", {"max_attempts": 1})["id"]
    down = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/down"), "retry_policy_id": policy})
    run = api.ok("POST", "/v1/task-runs", {"endpoint_id": down["id"]})
    assert api.wait_run(run["id"], terminal)["status"] == "dead_letter"

    deadline = time.monotonic() + 30
    while not receiver.received("/ops") and time.monotonic() < deadline:
        time.sleep(0.2)
    [request] = receiver.received("/ops")
    Webhook(ops["secret"]).verify(request.body, request.headers)
    envelope = json.loads(request.body)
    assert envelope["type"] == "edgecron.run.dead_lettered"
    assert envelope["data"]["task_run_id"] == run["id"] and envelope["data"]["last_status_code"] == 503
    assert receiver.received("/all") == []
    for endpoint in (ops, everything):  # the stack is shared: later tests' dead letters are theirs
        api.call("DELETE", f"/v1/endpoints/{endpoint['id']}")
