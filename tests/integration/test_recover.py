"""Recover: an Endpoint's runs that ended failed or dead_letter in a window are sent again as a new
attempt series, once, with their history kept; real HTTP to a receiver on 127.0.0.1, the injected
clock places the runs in time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from edgecron import clock
from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump, new_app

T0 = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)


def endpoint(key: str, url: str) -> str:
    policy = call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 1}).body["id"]
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url, "retry_policy_id": policy})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def run(key: str, endpoint_id: str, pump: Pump) -> dict[str, Any]:
    created = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id}).body
    pump.deliveries()
    return dict(call_api("GET", f"/v1/task-runs/{created['id']}", key=key).body)


def recover(key: str, endpoint_id: str, **body: str) -> Any:
    return call_api("POST", f"/v1/endpoints/{endpoint_id}/recover", key=key, body=body)


def test_failed_and_dead_lettered_runs_of_the_window_are_sent_again_once(
    receiver: Receiver, pump: Pump
) -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    _, key = new_app("recover")
    receiver.script("/in", Reply(503), Reply(404), Reply(503), Reply(200))
    receiver.script("/other", Reply(503))
    ep = endpoint(key, receiver.url("/in"))
    other = endpoint(key, receiver.url("/other"))
    dead = run(key, ep, pump)
    failed = run(key, ep, pump)
    foreign = run(key, other, pump)
    assert (dead["status"], failed["status"], foreign["status"]) == ("dead_letter", "failed", "dead_letter")
    fixed.advance(3600)
    late = run(key, ep, pump)
    assert late["status"] == "dead_letter"

    answer = recover(key, ep, since="2026-12-01T08:59:00Z", until="2026-12-01T09:30:00Z")
    assert answer.status == 200, answer.body
    assert answer.body == {"recovered": 2, "has_more": False, "next_cursor": None}
    again = recover(key, ep, since="2026-12-01T08:59:00Z", until="2026-12-01T09:30:00Z")
    assert again.body == {"recovered": 0, "has_more": False, "next_cursor": None}, (
        "a second call re-sends nothing new"
    )
    pump.deliveries()

    status = {
        r: call_api("GET", f"/v1/task-runs/{r}", key=key).body["status"] for r in (dead["id"], failed["id"])
    }
    assert status == {dead["id"]: "success", failed["id"]: "success"}
    assert call_api("GET", f"/v1/task-runs/{late['id']}", key=key).body["status"] == "dead_letter"
    assert call_api("GET", f"/v1/task-runs/{foreign['id']}", key=key).body["status"] == "dead_letter"
    history = call_api("GET", f"/v1/task-runs/{dead['id']}/attempts", key=key).body["data"]
    assert [a["status_code"] for a in history] == [503, 200], "the earlier attempt stays"
    assert len(receiver.received("/in")) == 5


def test_recover_without_until_takes_everything_since(receiver: Receiver, pump: Pump) -> None:
    clock.set_clock(clock.FixedClock(T0))
    _, key = new_app("recover-open")
    receiver.script("/in", Reply(500), Reply(200))
    ep = endpoint(key, receiver.url("/in"))
    run(key, ep, pump)
    assert recover(key, ep, since="2026-12-01T09:00:00Z").body == {
        "recovered": 1,
        "has_more": False,
        "next_cursor": None,
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "since"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-12-01T09:00:00"}, "since"),
        ({"since": "2026-12-01T10:00:00Z", "until": "2026-12-01T09:00:00Z"}, "until"),
        ({"since": "2026-12-01T09:00:00Z", "extra": 1}, "extra"),
    ],
)
def test_a_bad_window_is_a_400_naming_the_field(receiver: Receiver, body: dict[str, Any], field: str) -> None:
    _, key = new_app("recover-bad")
    ep = endpoint(key, receiver.url("/in"))
    resp = call_api("POST", f"/v1/endpoints/{ep}/recover", key=key, body=body)
    assert resp.status == 400 and resp.body["error"]["field"] == field, resp.body


def test_an_unknown_or_switched_off_endpoint_is_refused(receiver: Receiver) -> None:
    _, key = new_app("recover-refused")
    assert recover(key, "ep_nope", since="2026-12-01T09:00:00Z").status == 404
    ep = endpoint(key, receiver.url("/in"))
    call_api("PATCH", f"/v1/endpoints/{ep}", key=key, body={"active": False})
    resp = recover(key, ep, since="2026-12-01T09:00:00Z")
    assert resp.status == 409 and "enable it" in resp.body["error"]["message"]
