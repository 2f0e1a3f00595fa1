"""Each function runs under its own role from template.yaml: the calls that only some paths make
(the catch-up's retry enqueue, an auto-pause alert settled outside the scan and the worker) are
allowed to the function that makes them, and the permission matrix matches the template."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError

from edgecron import clock
from edgecron.data import secret_box
from edgecron_testing import iam as iam_support
from edgecron_testing.harness import call_api, given_up_message, invoke, load_event, sqs_event
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import ADMIN_KEY, IAM, PROVISIONED, Alerts, app_runs, new_app

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


def subscribe_to_operational_events(key: str) -> None:
    """An Endpoint for EdgeCron's own events, so the pause below also publishes one."""
    body = {"url": "http://127.0.0.1:9/ops", "filter_events": ["edgecron.*"]}
    assert call_api("POST", "/v1/endpoints", key=key, body=body).status == 201


def operational_events(key: str) -> list[str]:
    return [e["name"] for e in call_api("GET", "/v1/events", key=key).body["data"]]


def test_over_quota_fires_at_create_auto_pause_and_the_api_publishes_the_alert(alerts: Alerts) -> None:
    app_id, key = new_app("quota-alert")
    assert call_api("PUT", f"/v1/apps/{app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": 1}).status == 200
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
    subscribe_to_operational_events(key)
    clock.set_clock(clock.FixedClock(T0))
    s = call_api(
        "POST", "/v1/schedules", key=key, body={"cron": "1,2,3,4 0 12 * * *", "endpoint_ids": [ep]}
    ).body
    assert call_api("GET", f"/v1/schedules/{s['id']}", key=key).body["status"] == "PAUSED"
    [alert] = alerts()
    assert s["id"] in json.dumps(alert)
    assert operational_events(key) == ["edgecron.schedule.paused"]


@pytest.mark.parametrize("function", ["scan", "compensation"])
def test_over_quota_fires_dispatched_later_auto_pause_and_the_dispatcher_alerts(
    function: str, alerts: Alerts, receiver: Receiver
) -> None:
    app_id, key = new_app(f"quota-{function}")
    assert call_api("PUT", f"/v1/apps/{app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": 1}).status == 200
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
    subscribe_to_operational_events(key)
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    s = call_api(
        "POST", "/v1/schedules", key=key, body={"cron": "0,1,2,3 30 12 * * *", "endpoint_ids": [ep]}
    ).body
    assert alerts() == []  # nothing due within the look-ahead window at create
    fixed.advance(30 * 60 - 5)
    event = (
        {"detail": {}}
        if function == "scan"
        else load_event("cfn-update.json") | {"ResponseURL": receiver.url("/cfn")}
    )
    invoke(function, event)
    assert call_api("GET", f"/v1/schedules/{s['id']}", key=key).body["status"] == "PAUSED"
    [alert] = alerts()
    assert s["id"] in json.dumps(alert)
    assert operational_events(key) == ["edgecron.schedule.paused"]


def test_poison_messages_that_fail_a_third_fire_auto_pause_and_the_dlq_consumer_alerts(
    alerts: Alerts,
) -> None:
    app_id, key = new_app("poison-alert")
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
    subscribe_to_operational_events(key)
    clock.set_clock(clock.FixedClock(T0))
    s = call_api(
        "POST", "/v1/schedules", key=key, body={"cron": "1,2,3 0 12 * * *", "endpoint_ids": [ep]}
    ).body
    runs = sorted((r for r in app_runs(app_id) if r.source_id == s["id"]), key=lambda r: r.deliver_at)
    assert len(runs) == 3  # the look-ahead window holds all three fires
    clock.set_clock(clock.FixedClock(T0 + timedelta(seconds=10)))
    messages = [given_up_message(run.run_id, app_id) for run in runs]
    assert invoke("dlq", sqs_event(messages, PROVISIONED.queues["DeliveryDLQ"].arn)) == {
        "batchItemFailures": []
    }
    assert call_api("GET", f"/v1/schedules/{s['id']}", key=key).body["status"] == "PAUSED"
    [alert] = alerts()
    assert s["id"] in json.dumps(alert)
    published = operational_events(key)
    assert published.count("edgecron.run.dead_lettered") == 3 and "edgecron.schedule.paused" in published


def test_every_listed_call_is_allowed_and_every_grant_is_listed() -> None:
    if iam_support.recording():
        pytest.skip("this session rewrites the matrix")
    problems = iam_support.matrix_problems(IAM)
    assert not problems, "template.yaml and tests/iam/permissions.json disagree:\n" + "\n".join(problems)


def test_a_secret_decrypted_for_one_caller_is_not_served_to_another_from_the_cache() -> None:
    if iam_support.recording():
        pytest.skip("this session observes calls instead of refusing them")
    sealed = secret_box.seal("whsec_cached")
    assert secret_box.unseal(sealed) == "whsec_cached"  # decrypted (and cached) for the test code
    seen = len(IAM.denials)
    with iam_support.acting_as("fanout"), pytest.raises(ClientError) as refused:
        secret_box.unseal(sealed)  # the fan-out function may not decrypt: the cache must not answer it
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert [(d.function, d.action) for d in IAM.denials[seen:]] == [("FanoutFunction", "kms:Decrypt")]
    del IAM.denials[seen:]  # the one refusal this test expects
