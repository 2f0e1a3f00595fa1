"""A create whose object may exist is never made again under a new id: the Idempotency-Key stays bound
to the object it reserved, and the client's retry with the key answers for that object whatever step
failed. Each test injects one fault at the AWS call layer of the API function."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from edgecron import clock
from edgecron.data import events as event_data
from edgecron_testing import faults
from edgecron_testing.aws_fidelity import IndexTime
from edgecron_testing.harness import ApiResponse, call_api, invoke, load_event, new_endpoint, timeout_sec
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import Pump, app_runs, new_app

WRITES = ("PutItem", "UpdateItem", "TransactWriteItems")


def writes_to(table: str) -> dict[str, Any]:
    """The rule's filters for the API function's writes to `table` (a logical id in template.yaml)."""
    return {"function": "api", "table": table, "when": lambda call: call.operation in WRITES}


def post(key: str, path: str, body: dict[str, Any], idem: str) -> ApiResponse:
    return call_api("POST", path, key=key, body=body, headers={"Idempotency-Key": idem})


def listed_ids(key: str, path: str, index_time: IndexTime) -> list[str]:
    index_time.settle()  # lists read an index: let it show every write made
    return [item["id"] for item in call_api("GET", path, key=key).body["data"]]


def test_a_direct_run_whose_put_answer_was_lost_is_one_run_after_the_retry(
    app_key: str, receiver: Receiver, pump: Pump, index_time: IndexTime
) -> None:
    endpoint_id = new_endpoint(app_key, receiver.url("/hook"))
    body = {"endpoint_id": endpoint_id, "payload": {"n": 1}}
    with faults.Faults() as f:
        f.on("dynamodb", kind=faults.AFTER, **writes_to("RunsTable"))
        first = post(app_key, "/v1/task-runs", body, "run-once")
    assert f.count(faults.AFTER) == 1
    assert first.status >= 500, first.body

    retried = post(app_key, "/v1/task-runs", body, "run-once")
    assert retried.status == 201, retried.body
    assert listed_ids(app_key, "/v1/task-runs", index_time) == [retried.body["id"]]
    pump.deliveries(quiet_for=0.3)
    assert len({request.headers["webhook-id"] for request in receiver.requests}) == 1


def test_a_schedule_whose_put_answer_was_lost_is_one_schedule_after_the_retry(
    app_key: str, index_time: IndexTime
) -> None:
    endpoint_id = new_endpoint(app_key)
    body = {"cron": "*/10 * * * * *", "endpoint_ids": [endpoint_id], "status": "PAUSED"}
    with faults.Faults() as f:
        f.on("dynamodb", kind=faults.AFTER, **writes_to("SchedulesTable"))
        first = post(app_key, "/v1/schedules", body, "schedule-once")
    assert f.count(faults.AFTER) == 1
    assert first.status >= 500, first.body

    retried = post(app_key, "/v1/schedules", body, "schedule-once")
    assert retried.status == 201, retried.body
    assert listed_ids(app_key, "/v1/schedules", index_time) == [retried.body["id"]]


def test_an_event_whose_put_answer_was_lost_is_one_event_after_the_retry(
    app_key: str, index_time: IndexTime
) -> None:
    body = {"name": "invoice.paid", "payload": {"n": 1}}
    with faults.Faults() as f:
        f.on("dynamodb", kind=faults.AFTER, **writes_to("EventsTable"))
        first = post(app_key, "/v1/events", body, "event-once")
    assert f.count(faults.AFTER) == 1
    assert first.status >= 500, first.body

    retried = post(app_key, "/v1/events", body, "event-once")
    assert retried.status == 202, retried.body
    assert listed_ids(app_key, "/v1/events", index_time) == [retried.body["id"]]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/task-runs", {"endpoint_id": "ep_missing"}),
        ("/v1/schedules", {"cron": "not a cron"}),
    ],
)
def test_a_create_refused_before_storing_releases_its_key(
    app_key: str, path: str, body: dict[str, Any]
) -> None:
    refused = post(app_key, path, body, "fix-and-retry")
    assert 400 <= refused.status < 500, refused.body
    endpoint_id = new_endpoint(app_key)
    fixed = {"endpoint_id": endpoint_id} if path == "/v1/task-runs" else {"cron": "0 0 1 1 *"}
    assert post(app_key, path, fixed, "fix-and-retry").status == 201


# --- an acknowledged publish reaches every matching Endpoint once; it is billed once ---------------


@pytest.fixture
def fixed() -> clock.FixedClock:
    c = clock.FixedClock(datetime.now(UTC).replace(microsecond=0))
    clock.set_clock(c)
    return c


def three_subscribers(key: str) -> set[str]:
    ids = {new_endpoint(key, filter_events=["invoice.*"]) for _ in range(3)}
    new_endpoint(key, filter_events=["user.*"])  # matches nothing published here
    return ids


def fan_out_all(pump: Pump) -> int:
    pages = 0
    while pump.once("FanoutQueue", "fanout", batch=1):
        pages += 1
    return pages


def event_runs(app_id: str, event_id: str) -> list[str]:
    """The Endpoint of each run the Event's fan-out made."""
    return sorted(run.endpoint_id for run in app_runs(app_id) if run.source_id == event_id)


def billed(key: str) -> int:
    return int(call_api("GET", "/v1/usage", key=key).body["event"])


def scan() -> None:
    invoke("scan", load_event("scan.json"))


def test_a_publish_that_died_before_sending_its_fan_out_is_fanned_out_by_the_retry(
    pump: Pump, fixed: clock.FixedClock
) -> None:
    app_id, key = new_app("died-publish")
    subscribers = three_subscribers(key)
    body = {"name": "invoice.paid", "payload": {"n": 1}}
    with faults.Faults() as f:
        f.on("sqs", "SendMessage", kind=faults.KILL, function="api")
        with pytest.raises(faults.InvocationKilled):
            post(key, "/v1/events", body, "publish-once")
    assert f.count(faults.KILL) == 1

    fixed.advance(timeout_sec("api") + 1)  # the dead request's lease ended
    retried = post(key, "/v1/events", body, "publish-once")
    assert retried.status == 202, retried.body
    fan_out_all(pump)
    assert event_runs(app_id, retried.body["id"]) == sorted(subscribers)
    assert billed(key) == 1


def test_a_publish_whose_fan_out_message_was_not_sent_is_fanned_out_by_the_scan(
    pump: Pump, fixed: clock.FixedClock
) -> None:
    app_id, key = new_app("scan-fanout")
    subscribers = three_subscribers(key)
    with faults.Faults() as f:
        f.on("sqs", "SendMessage", kind=faults.BEFORE, function="api")
        published = post(key, "/v1/events", {"name": "invoice.paid"}, "acknowledged")
    assert f.count(faults.BEFORE) == 1
    assert published.status == 202, published.body
    assert fan_out_all(pump) == 0

    fixed.advance(event_data.FANOUT_WAKE_MS / 1000 + 1)
    scan()
    fan_out_all(pump)
    assert event_runs(app_id, published.body["id"]) == sorted(subscribers)
    fixed.advance(event_data.FANOUT_WAKE_MS / 1000 + 1)
    scan()  # the fan-out started: nothing is sent again
    assert fan_out_all(pump) == 0
    assert event_runs(app_id, published.body["id"]) == sorted(subscribers)
    assert billed(key) == 1


def test_a_publish_whose_billing_answer_was_lost_is_billed_once_after_the_retry(pump: Pump) -> None:
    app_id, key = new_app("billing-lost")
    subscribers = three_subscribers(key)
    body = {"name": "invoice.paid"}
    with faults.Faults() as f:
        f.on("dynamodb", kind=faults.AFTER, **writes_to("UsageTable"))
        first = post(key, "/v1/events", body, "bill-once")
    assert f.count(faults.AFTER) == 1
    assert first.status >= 500, first.body

    retried = post(key, "/v1/events", body, "bill-once")
    assert retried.status == 202, retried.body
    fan_out_all(pump)
    assert event_runs(app_id, retried.body["id"]) == sorted(subscribers)
    assert billed(key) == 1


# --- nothing is left behind by a check that failed on one run --------------------------------------


def test_a_run_whose_check_failed_once_is_checked_again_and_delivered(
    pump: Pump, fixed: clock.FixedClock, receiver: Receiver
) -> None:
    _, key = new_app("check-fault")
    endpoint_id = new_endpoint(key, receiver.url("/lost"))
    with faults.Faults() as f:  # the run is stored, its delivery message is not sent
        f.on("sqs", "SendMessageBatch", kind=faults.BEFORE, function="api")
        created = post(key, "/v1/task-runs", {"endpoint_id": endpoint_id}, "lost-message")
    assert created.status == 201, created.body and f.count(faults.BEFORE) == 1

    fixed.advance(600)  # the scan's check of recent runs reads it now
    with faults.Faults() as f:
        f.on("dynamodb", "UpdateItem", kind=faults.BEFORE, function="scan", table="RunsTable")
        scan()
    assert f.count(faults.BEFORE) == 1
    for _ in range(3):
        fixed.advance(60)
        scan()
        pump.deliveries(quiet_for=0.2)
    assert [r.headers.get("webhook-id") for r in receiver.requests] == [created.body["id"]]
    assert call_api("GET", f"/v1/task-runs/{created.body['id']}", key=key).body["status"] == "success"
