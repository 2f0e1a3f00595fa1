"""A run belongs to its App: every reader that knows a run by id also knows the App (a message carries
it, an API key gives it), and a run looked up under another App is no run at all."""

from __future__ import annotations

import json

from edgecron_testing.harness import call_api, invoke, sqs_event
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import drain_queues, new_app
from tests.integration.test_delivery import create_run, get_run, make_endpoint

QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:q"
DLQ_ARN = "arn:aws:sqs:us-east-1:123456789012:dlq"


def _message(run_id: str, app_id: str, receive_count: int = 1) -> dict[str, object]:
    return {
        "MessageId": "m1",
        "ReceiptHandle": "r1",
        "Body": json.dumps({"run_id": run_id, "app_id": app_id}),
        "Attributes": {"ApproximateReceiveCount": str(receive_count)},
    }


def test_a_delivery_message_naming_another_app_delivers_nothing(app_key: str, receiver: Receiver) -> None:
    ep = make_endpoint(app_key, receiver.url("/mine"))
    run_id = str(create_run(app_key, ep["id"])["id"])
    drain_queues()  # the run's own message is gone
    other_app, _ = new_app("other")
    assert invoke("worker", sqs_event([_message(run_id, other_app)], QUEUE_ARN)) == {"batchItemFailures": []}
    assert receiver.received("/mine") == []
    assert get_run(app_key, run_id)["status"] == "pending"


def test_a_dead_letter_message_naming_another_app_leaves_the_run_alone(
    app_key: str, receiver: Receiver
) -> None:
    ep = make_endpoint(app_key, receiver.url("/kept"))
    run_id = str(create_run(app_key, ep["id"])["id"])
    drain_queues()
    other_app, _ = new_app("other")
    assert invoke("dlq", sqs_event([_message(run_id, other_app, 5)], DLQ_ARN)) == {"batchItemFailures": []}
    assert get_run(app_key, run_id)["status"] == "pending"


def test_another_apps_key_sees_no_run(app_key: str, receiver: Receiver) -> None:
    ep = make_endpoint(app_key, receiver.url("/private"))
    run_id = str(create_run(app_key, ep["id"])["id"])
    _, other_key = new_app("other")
    for method, path in [
        ("GET", f"/v1/task-runs/{run_id}"),
        ("GET", f"/v1/task-runs/{run_id}/attempts"),
        ("POST", f"/v1/task-runs/{run_id}/cancel"),
        ("POST", f"/v1/task-runs/{run_id}/replay"),
    ]:
        resp = call_api(method, path, key=other_key)
        assert resp.status == 404, (method, path, resp.body)
    assert call_api("GET", "/v1/task-runs", key=other_key).body["data"] == []
