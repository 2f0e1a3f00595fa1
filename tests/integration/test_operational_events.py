"""Operational events in-process: EdgeCron's own events reach only the Endpoints that name them,
signed like any Event (checked with the standardwebhooks library), never billed, and never about
the delivery of another operational event."""

from __future__ import annotations

import json
from typing import Any

from standardwebhooks.webhooks import Webhook

from edgecron_testing.harness import call_api, given_up_message, invoke, sqs_event
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import PROVISIONED, Pump, app_runs, drain_queues, new_app


def endpoint(key: str, url: str, **extra: object) -> dict[str, Any]:
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url, **extra})
    assert resp.status == 201, resp.body
    return dict(resp.body)


def one_attempt(key: str) -> str:
    return str(call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 1}).body["id"])


def drain(pump: Pump) -> None:
    for _ in range(5):
        while pump.once("FanoutQueue", "fanout", batch=1):
            pass
        if not pump.deliveries():
            return


def usage(key: str) -> dict[str, Any]:
    return dict(call_api("GET", "/v1/usage", key=key).body)


def test_a_dead_letter_reaches_only_the_endpoints_that_name_operational_events(
    receiver: Receiver, pump: Pump
) -> None:
    _, key = new_app("ops-dead-letter")
    receiver.script("/down", Reply(500))
    ops = endpoint(key, receiver.url("/ops"), filter_events=["edgecron.*"])
    runs_only = endpoint(key, receiver.url("/runs"), filter_events=["edgecron.run.*"])
    everything = endpoint(key, receiver.url("/all"), filter_events=["*"])
    down = endpoint(key, receiver.url("/down"), retry_policy_id=one_attempt(key))
    before = usage(key)
    run = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": down["id"]}).body
    drain(pump)

    names = {
        path: [json.loads(r.body)["type"] for r in receiver.received(path)] for path in ("/ops", "/runs")
    }
    assert names["/ops"] == ["edgecron.endpoint.failing", "edgecron.run.dead_lettered"] or names["/ops"] == [
        "edgecron.run.dead_lettered",
        "edgecron.endpoint.failing",
    ]
    assert names["/runs"] == ["edgecron.run.dead_lettered"]
    assert receiver.received("/all") == [], "a plain * does not subscribe to operational events"
    [request] = [r for r in receiver.received("/runs")]
    Webhook(str(runs_only["secret"])).verify(request.body, request.headers)
    envelope = json.loads(request.body)
    assert envelope["data"]["task_run_id"] == run["id"]
    assert envelope["data"]["endpoint_id"] == down["id"]
    assert envelope["data"]["last_status_code"] == 500
    Webhook(str(ops["secret"])).verify(
        receiver.received("/ops")[0].body, receiver.received("/ops")[0].headers
    )
    after = usage(key)
    assert after["event"] == before["event"], "operational events are never billed"
    assert everything["id"] != ops["id"]


def test_nothing_is_published_about_an_operational_delivery(receiver: Receiver, pump: Pump) -> None:
    _, key = new_app("ops-no-loop")
    receiver.script("/ops", Reply(500))
    receiver.script("/down", Reply(500))
    policy = one_attempt(key)
    ops = endpoint(key, receiver.url("/ops"), filter_events=["edgecron.*"], retry_policy_id=policy)
    down = endpoint(key, receiver.url("/down"), retry_policy_id=policy)
    call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": down["id"]})
    drain(pump)
    got = sorted(json.loads(r.body)["type"] for r in receiver.received("/ops"))
    assert got == ["edgecron.endpoint.failing", "edgecron.run.dead_lettered"], got
    health = call_api("GET", f"/v1/endpoints/{ops['id']}", key=key).body["health"]
    assert health["consecutive_failures"] == 2, "its failures still count for its health"


def test_an_app_without_subscribers_gets_no_operational_events(receiver: Receiver, pump: Pump) -> None:
    _, key = new_app("ops-none")
    receiver.script("/down", Reply(500))
    down = endpoint(key, receiver.url("/down"), retry_policy_id=one_attempt(key))
    call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": down["id"]})
    drain(pump)
    assert call_api("GET", "/v1/events", key=key).body["data"] == []


def test_users_cannot_publish_operational_events() -> None:
    _, key = new_app("ops-reserved")
    resp = call_api("POST", "/v1/events", key=key, body={"name": "edgecron.endpoint.disabled"})
    assert resp.status == 400 and resp.body["error"]["field"] == "name", resp.body
    assert call_api("GET", "/v1/events", key=key).body["data"] == []


def test_a_poisoned_operational_delivery_publishes_nothing_more(receiver: Receiver, pump: Pump) -> None:
    app_id, key = new_app("ops-poison")
    receiver.script("/down", Reply(500))
    ops = endpoint(key, "http://127.0.0.1:9/ops", filter_events=["edgecron.*"])
    down = endpoint(key, receiver.url("/down"), retry_policy_id=one_attempt(key))
    call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": down["id"]})
    pump.deliveries()
    while pump.once("FanoutQueue", "fanout", batch=1):
        pass
    before = sorted(e["name"] for e in call_api("GET", "/v1/events", key=key).body["data"])
    assert before == ["edgecron.endpoint.failing", "edgecron.run.dead_lettered"]
    # the operational deliveries' messages keep failing: SQS hands them to the DLQ consumer
    runs = [r for r in app_runs(app_id) if r.endpoint_id == ops["id"]]
    assert len(runs) == 2
    messages = [given_up_message(run.run_id, app_id) for run in runs]
    drain_queues()
    assert invoke("dlq", sqs_event(messages, PROVISIONED.queues["DeliveryDLQ"].arn)) == {
        "batchItemFailures": []
    }
    assert {r.status for r in app_runs(app_id) if r.endpoint_id == ops["id"]} == {"dead_letter"}
    after = sorted(e["name"] for e in call_api("GET", "/v1/events", key=key).body["data"])
    assert after == before, "nothing is published about an operational delivery"


def test_missed_fire_times_are_announced() -> None:
    from datetime import UTC, datetime

    from edgecron import clock

    fixed = clock.FixedClock(datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC))
    clock.set_clock(fixed)
    _, key = new_app("ops-missed")
    endpoint(key, "http://127.0.0.1:9/ops", filter_events=["edgecron.fire.*"])
    target = endpoint(key, "http://127.0.0.1:9/x")
    body = {"cron": "* * * * *", "endpoint_ids": [target["id"]], "missed_policy": "SKIP"}
    schedule = call_api("POST", "/v1/schedules", key=key, body=body).body
    fixed.advance(10 * 60)  # ten minutes with no scan: an outage
    invoke("scan", {"detail": {}})
    events = call_api("GET", "/v1/events", key=key).body["data"]
    assert {e["name"] for e in events} == {"edgecron.fire.missed"}, events
    payloads = [call_api("GET", f"/v1/events/{e['id']}", key=key).body["payload"] for e in events]
    assert {p["schedule_id"] for p in payloads} == {schedule["id"]}
    assert {p["missed_policy"] for p in payloads} == {"SKIP"}
    assert sum(p["missed"] for p in payloads) >= 9, "ten minutes of an every-minute schedule"
