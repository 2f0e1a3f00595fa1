"""A stored run this release cannot read (an attribute missing, or a value it does not know, as a
newer release may write before a rollback) is one bad item wherever it is read: lists leave it out
and say so in the log, a read of that run alone answers a clear 500, and a worker or the DLQ
consumer lets its message go instead of failing it for ever."""

from __future__ import annotations

import logging

import pytest

from edgecron.data.keys import run_partition
from edgecron.data.models import TaskRunModel
from edgecron_testing.harness import call_api, delivery_message, given_up_message, invoke, sqs_event
from tests.integration.conftest import new_app, queue


def later_run(key: str, endpoint_id: str) -> str:
    """A direct run due in an hour: it waits, so nothing but the test touches it."""
    resp = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id, "delay_sec": 3600})
    assert resp.status in (201, 202), resp.body
    return str(resp.body["id"])


def spoil(app_id: str, run_id: str, how: str) -> None:
    row = TaskRunModel(run_partition(app_id, run_id), run_id)
    if how == "unknown status":  # a status a newer release wrote
        row.update(actions=[TaskRunModel.status.set("held_by_a_newer_release")])
    else:
        row.update(actions=[TaskRunModel.deliver_at.remove()])


def logged(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.getMessage() == message]


@pytest.fixture(params=["unknown status", "missing attribute"])
def spoiled(request: pytest.FixtureRequest) -> tuple[str, str, str, list[str]]:
    """(app id, key, the spoiled run, the App's good runs)."""
    app_id, key = new_app("unreadable")
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
    first, bad, last = later_run(key, ep), later_run(key, ep), later_run(key, ep)
    spoil(app_id, bad, request.param)
    return app_id, key, bad, [first, last]


def test_the_run_list_leaves_out_a_run_it_cannot_read_and_logs_its_id(
    spoiled: tuple[str, str, str, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    app_id, key, bad, good = spoiled
    caplog.clear()
    resp = call_api("GET", "/v1/task-runs", key=key, query={"limit": "10"})
    assert resp.status == 200, resp.body
    assert sorted(run["id"] for run in resp.body["data"]) == sorted(good)
    [line] = logged(caplog, "stored run left out: this release cannot read it")
    assert line.run_id == bad and line.app_id == app_id  # type: ignore[attr-defined]


def test_reading_a_run_it_cannot_read_answers_500_naming_why(
    spoiled: tuple[str, str, str, list[str]],
) -> None:
    _, key, bad, good = spoiled
    for method, path in [
        ("GET", f"/v1/task-runs/{bad}"),
        ("GET", f"/v1/task-runs/{bad}/attempts"),
        ("POST", f"/v1/task-runs/{bad}/cancel"),
    ]:
        resp = call_api(method, path, key=key)
        assert resp.status == 500, (path, resp.body)
        assert resp.body["error"]["code"] == "STORED_ITEM_UNREADABLE", resp.body
        assert bad in resp.body["error"]["message"]
    assert call_api("GET", f"/v1/task-runs/{good[0]}", key=key).status == 200


def test_a_worker_lets_the_message_of_a_run_it_cannot_read_go(
    spoiled: tuple[str, str, str, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    app_id, _, bad, _ = spoiled
    caplog.clear()
    result = invoke("worker", sqs_event([delivery_message(bad, app_id)], queue("DeliveryQueue").arn))
    assert result == {"batchItemFailures": []}  # not failed, so SQS does not deliver it for ever
    [line] = logged(caplog, "delivery message dropped: this release cannot read its run")
    assert line.run_id == bad  # type: ignore[attr-defined]


def test_the_dlq_consumer_lets_the_message_of_a_run_it_cannot_read_go(
    spoiled: tuple[str, str, str, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    app_id, _, bad, _ = spoiled
    caplog.clear()
    result = invoke("dlq", sqs_event([given_up_message(bad, app_id)], queue("DeliveryDLQ").arn))
    assert result == {"batchItemFailures": []}
    assert logged(caplog, "poison message let go: this release cannot read its run")


def test_the_dead_letter_list_leaves_out_one_it_cannot_read(caplog: pytest.LogCaptureFixture) -> None:
    app_id, key = new_app("unreadable-dead")
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
    bad, good = (
        call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep}).body["id"] for _ in range(2)
    )
    for run_id in (bad, good):  # SQS gave up on both: dead letters
        invoke("dlq", sqs_event([given_up_message(run_id, app_id)], queue("DeliveryDLQ").arn))
    spoil(app_id, bad, "missing attribute")
    caplog.clear()
    resp = call_api("GET", "/v1/dead-letters", key=key)
    assert resp.status == 200, resp.body
    assert [run["id"] for run in resp.body["data"]] == [good]
    [line] = logged(caplog, "stored run left out: this release cannot read it")
    assert line.run_id == bad  # type: ignore[attr-defined]
