"""GET /v1/task-runs/{id}/request: the request a run's attempts send, as the receiver got it, with
every credential redacted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import Pump, new_app


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_the_request_shown_is_the_one_received_with_credentials_redacted(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    endpoint = call_api(
        "POST",
        "/v1/endpoints",
        key=app_key,
        body={
            "url": receiver.url("/hook"),
            "method": "PUT",
            "headers": {"Authorization": "Bearer s3cr3t-value", "X-Api-Key": "k-123", "X-Tenant": "acme"},
        },
    ).body
    run = call_api(
        "POST", "/v1/task-runs", key=app_key, body={"endpoint_id": endpoint["id"], "payload": {"a": 1}}
    ).body
    pump.deliveries()
    [got] = receiver.wait_for("/hook", 1)

    resp = call_api("GET", f"/v1/task-runs/{run['id']}/request", key=app_key)
    assert resp.status == 200, resp.body
    shown = resp.body
    assert (shown["method"], shown["url"], shown["body_bytes"]) == (
        "PUT",
        receiver.url("/hook"),
        len(got.body),
    )
    headers = {k.lower(): v for k, v in shown["headers"].items()}
    received = {k.lower(): v for k, v in got.headers.items()}
    assert headers["authorization"] == headers["x-api-key"] == "[redacted]"
    assert headers["webhook-signature"] == "v1,[redacted]"
    assert "s3cr3t-value" not in str(shown) and "k-123" not in str(shown)
    assert (
        received["webhook-signature"].startswith("v1,") and received["authorization"] == "Bearer s3cr3t-value"
    )
    for name in ("x-tenant", "user-agent", "content-type", "webhook-id"):
        assert headers[name] == received[name], name
    assert received["edgecron-attempt"] == "1" and "attempt number" in headers["edgecron-attempt"]


def test_an_unknown_run_or_another_apps_run_is_not_found(app_key: str, receiver: Receiver) -> None:
    endpoint = call_api("POST", "/v1/endpoints", key=app_key, body={"url": receiver.url("/hook")}).body
    run = call_api("POST", "/v1/task-runs", key=app_key, body={"endpoint_id": endpoint["id"]}).body
    other_key = new_app("other")[1]
    assert call_api("GET", f"/v1/task-runs/{run['id']}/request", key=other_key).status == 404
    missing = call_api("GET", "/v1/task-runs/run_01JDQ7Z8S5B0W6X3K2M9P4R7TV/request", key=app_key)
    assert (missing.status, missing.body["error"]["code"]) == (404, "NOT_FOUND")
