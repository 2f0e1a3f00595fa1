"""Endpoint health in-process: finished runs counted against their Endpoint, a warning when a healthy
one starts failing, auto-disable once both limits are reached (notification and alert), runs for a
disabled Endpoint parked as dead letters, and a re-enable that starts health afresh. Real HTTP to a
receiver on 127.0.0.1; the injected clock moves time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from edgecron import clock
from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Alerts, Pump, new_app

START = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
def at_start() -> clock.FixedClock:
    fixed = clock.FixedClock(START)
    clock.set_clock(fixed)
    return fixed


def one_attempt_endpoint(key: str, url: str, **extra: object) -> str:
    policy = call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 1}).body["id"]
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url, "retry_policy_id": policy, **extra})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def deliver_one(key: str, endpoint_id: str, pump: Pump) -> dict[str, Any]:
    created = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id})
    assert created.status == 201, created.body
    pump.deliveries()
    return dict(call_api("GET", f"/v1/task-runs/{created.body['id']}", key=key).body)


def endpoint_of(key: str, endpoint_id: str) -> dict[str, Any]:
    return dict(call_api("GET", f"/v1/endpoints/{endpoint_id}", key=key).body)


def kinds(key: str) -> list[str]:
    return [n["kind"] for n in call_api("GET", "/v1/notifications", key=key).body["data"]]


def test_a_new_endpoint_is_healthy_with_the_default_limits(receiver: Receiver) -> None:
    _, key = new_app("health-defaults")
    ep = endpoint_of(key, one_attempt_endpoint(key, receiver.url("/ok")))
    assert ep["health"] == {
        "state": "healthy",
        "consecutive_failures": 0,
        "failing_since": None,
        "last_success_at": None,
    }
    assert (ep["disable_after_failures"], ep["disable_after_sec"], ep["disabled_reason"]) == (
        100,
        432000,
        None,
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("disable_after_failures", -1),
        ("disable_after_sec", -5),
        ("disable_after_failures", "3"),
        ("disable_after_sec", 10**9),
    ],
)
def test_bad_limits_are_refused_and_nothing_is_stored(receiver: Receiver, field: str, value: object) -> None:
    _, key = new_app("health-bad")
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url("/x"), field: value})
    assert resp.status == 400 and resp.body["error"]["field"] == field, resp.body
    assert call_api("GET", "/v1/endpoints", key=key).body["data"] == []


def test_failures_past_both_limits_disable_the_endpoint_once(
    receiver: Receiver, pump: Pump, at_start: clock.FixedClock, alerts: Alerts
) -> None:
    _, key = new_app("health-disable")
    receiver.script("/down", Reply(500))
    ep_id = one_attempt_endpoint(
        key, receiver.url("/down"), disable_after_failures=3, disable_after_sec=600, description="billing"
    )
    for _ in range(3):
        assert deliver_one(key, ep_id, pump)["status"] == "dead_letter"
    failing = endpoint_of(key, ep_id)
    assert failing["active"] is True, "three failures within 600 s: not yet"
    assert failing["health"]["state"] == "failing" and failing["health"]["consecutive_failures"] == 3
    assert failing["health"]["failing_since"] == "2026-12-01T09:00:00.000Z"
    assert kinds(key) == ["ENDPOINT_FAILING"]

    at_start.advance(600)
    assert deliver_one(key, ep_id, pump)["status"] == "dead_letter"
    disabled = endpoint_of(key, ep_id)
    assert disabled["active"] is False and disabled["disabled_reason"] == "failing"
    assert disabled["health"]["state"] == "disabled" and disabled["health"]["consecutive_failures"] == 4
    assert kinds(key) == ["ENDPOINT_DISABLED", "ENDPOINT_FAILING"]
    sent = [m for m in alerts() if m.get("kind") == "ENDPOINT_DISABLED"]
    assert len(sent) == 1 and sent[0]["endpoint_id"] == ep_id and sent[0]["consecutive_failures"] == 4
    assert len(receiver.received("/down")) == 4

    parked = deliver_one(key, ep_id, pump)
    assert parked["status"] == "dead_letter" and parked["last_error_kind"] == "endpoint_disabled"
    assert len(receiver.received("/down")) == 4, "a run for a disabled endpoint is never sent"
    assert endpoint_of(key, ep_id)["health"]["consecutive_failures"] == 4, "a parked run does not count"
    assert kinds(key) == ["ENDPOINT_DISABLED", "ENDPOINT_FAILING"]

    receiver.script("/down", Reply(200))
    enabled = call_api("PATCH", f"/v1/endpoints/{ep_id}", key=key, body={"active": True}).body
    assert enabled["active"] is True and enabled["disabled_reason"] is None
    assert enabled["health"] == {
        "state": "healthy",
        "consecutive_failures": 0,
        "failing_since": None,
        "last_success_at": None,
    }
    replayed = call_api("POST", f"/v1/dead-letters/{parked['id']}/replay", key=key)
    assert replayed.status in (200, 202), replayed.body
    pump.deliveries()
    assert call_api("GET", f"/v1/task-runs/{parked['id']}", key=key).body["status"] == "success"
    assert len(receiver.received("/down")) == 5


def test_a_success_ends_the_streak_and_is_written_once_a_minute(
    receiver: Receiver, pump: Pump, at_start: clock.FixedClock
) -> None:
    _, key = new_app("health-success")
    receiver.script("/flaky", Reply(500), Reply(200))
    ep_id = one_attempt_endpoint(key, receiver.url("/flaky"))
    assert deliver_one(key, ep_id, pump)["status"] == "dead_letter"
    assert endpoint_of(key, ep_id)["health"]["state"] == "failing"
    assert deliver_one(key, ep_id, pump)["status"] == "success"
    health = endpoint_of(key, ep_id)["health"]
    assert health == {
        "state": "healthy",
        "consecutive_failures": 0,
        "failing_since": None,
        "last_success_at": "2026-12-01T09:00:00.000Z",
    }
    at_start.advance(30)
    deliver_one(key, ep_id, pump)
    assert endpoint_of(key, ep_id)["health"]["last_success_at"] == "2026-12-01T09:00:00.000Z"
    at_start.advance(31)
    deliver_one(key, ep_id, pump)
    assert endpoint_of(key, ep_id)["health"]["last_success_at"] == "2026-12-01T09:01:01.000Z"


def test_a_flapping_endpoint_warns_once_an_hour(
    receiver: Receiver, pump: Pump, at_start: clock.FixedClock
) -> None:
    _, key = new_app("health-flap")
    receiver.script("/flap", Reply(500), Reply(200), Reply(500), Reply(200), Reply(500))
    ep_id = one_attempt_endpoint(key, receiver.url("/flap"))
    for _ in range(4):
        deliver_one(key, ep_id, pump)
    assert kinds(key) == ["ENDPOINT_FAILING"]
    at_start.advance(3600)
    deliver_one(key, ep_id, pump)
    assert kinds(key) == ["ENDPOINT_FAILING", "ENDPOINT_FAILING"]


def test_a_users_edit_keeps_the_streak_and_zero_failures_never_disables(
    receiver: Receiver, pump: Pump, at_start: clock.FixedClock
) -> None:
    _, key = new_app("health-edit")
    receiver.script("/down", Reply(503))
    ep_id = one_attempt_endpoint(key, receiver.url("/down"), disable_after_failures=0, disable_after_sec=0)
    for _ in range(2):
        deliver_one(key, ep_id, pump)
    edited = call_api("PATCH", f"/v1/endpoints/{ep_id}", key=key, body={"description": "renamed"})
    assert edited.status == 200 and edited.body["health"]["consecutive_failures"] == 2
    at_start.advance(10 * 86_400)
    deliver_one(key, ep_id, pump)
    after = endpoint_of(key, ep_id)
    assert after["active"] is True and after["health"]["consecutive_failures"] == 3


def test_a_user_turning_an_endpoint_off_is_not_a_disable(receiver: Receiver, pump: Pump) -> None:
    _, key = new_app("health-off")
    ep_id = one_attempt_endpoint(key, receiver.url("/ok"))
    off = call_api("PATCH", f"/v1/endpoints/{ep_id}", key=key, body={"active": False}).body
    assert off["active"] is False and off["disabled_reason"] is None and off["health"]["state"] == "healthy"
    refused = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep_id})
    assert refused.status == 409 and refused.body["error"]["field"] == "endpoint_id"


def test_an_event_for_a_disabled_endpoint_is_kept_as_a_dead_letter(
    receiver: Receiver, pump: Pump, at_start: clock.FixedClock
) -> None:
    _, key = new_app("health-event")
    receiver.script("/down", Reply(500))
    ep_id = one_attempt_endpoint(
        key, receiver.url("/down"), disable_after_failures=1, disable_after_sec=0, filter_events=["order.*"]
    )
    deliver_one(key, ep_id, pump)
    assert endpoint_of(key, ep_id)["disabled_reason"] == "failing"
    event = call_api("POST", "/v1/events", key=key, body={"name": "order.paid", "payload": {"n": 1}})
    assert event.status in (201, 202), event.body
    while pump.once("FanoutQueue", "fanout", batch=1):
        pass
    pump.deliveries()
    deliveries = call_api("GET", f"/v1/events/{event.body['id']}", key=key).body["deliveries"]
    assert [d["endpoint_id"] for d in deliveries] == [ep_id]
    run = call_api("GET", f"/v1/task-runs/{deliveries[0]['task_run_id']}", key=key).body
    assert (run["status"], run["last_error_kind"]) == ("dead_letter", "endpoint_disabled")
    assert len(receiver.received("/down")) == 1
