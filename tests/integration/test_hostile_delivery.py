"""Hostile receivers against the sender and the worker: every HTTP call is one recorded attempt, a
send never raises, an attempt never outlives its total deadline or the worker's invocation."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from edgecron.data.models import EndpointModel
from edgecron.services import http_sender
from edgecron_testing import hostile
from edgecron_testing.harness import load_function, sqs_event
from edgecron_testing.inprocess import app_of_run
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump, drain_queues
from tests.integration.test_delivery import attempts, create_run, fast_policy, get_run, make_endpoint


@pytest.fixture
def receivers() -> Iterator[list[hostile.HostileReceiver]]:
    started: list[hostile.HostileReceiver] = []
    yield started
    for r in started:
        r.close()


def serve(
    receivers: list[hostile.HostileReceiver], behaviour: hostile.Behaviour, *, raw: bool = False
) -> hostile.HostileReceiver:
    r = hostile.HostileReceiver(behaviour, hold_sec=8.0, lifetime_sec=60.0, raw=raw)
    receivers.append(r)
    return r


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def send(url: str, timeout_ms: int = 1000, headers: dict[str, str] | None = None) -> http_sender.HttpOutcome:
    return http_sender.send("POST", url, headers or {}, b"{}", timeout_ms)


# --- the sender: one total deadline, bounded reads, no exception ------------------------------------


def test_a_dribbling_receiver_is_cut_at_the_total_deadline(receivers: list[hostile.HostileReceiver]) -> None:
    """A byte every 0.3 s never trips a per-read timeout; the attempt's 1,000 ms deadline cuts it."""
    r = serve(receivers, hostile.dribble(0.3))
    out = send(r.url())
    assert (out.result.error, out.result.error_kind) == ("timed out after 1000 ms", "timeout"), out.result
    assert "total deadline" in str(out.result.error_detail)
    assert r.requests == 1


def test_a_receiver_that_hangs_after_the_headers_is_a_timeout_with_its_status(
    receivers: list[hostile.HostileReceiver],
) -> None:
    r = serve(receivers, hostile.hang_after_headers())
    out = send(r.url())
    assert (out.result.status_code, out.result.error_kind) == (200, "timeout"), out.result
    assert r.requests == 1


def test_a_10_mb_body_is_read_only_up_to_the_summary(receivers: list[hostile.HostileReceiver]) -> None:
    r = serve(receivers, hostile.huge_body())
    out = send(r.url(), timeout_ms=5000)
    assert out.result.status_code == 200 and out.result.error_kind is None, out.result
    assert out.response_summary is not None and len(out.response_summary.encode()) <= 1024
    assert out.response_summary.startswith("xxx") and out.response_summary.endswith("\u2026")


def test_a_tls_handshake_dribbled_a_byte_at_a_time_is_cut_at_the_total_deadline(
    receivers: list[hostile.HostileReceiver],
) -> None:
    r = serve(receivers, hostile.tls_dribble(0.3), raw=True)
    out = send(r.url().replace("http://", "https://"))
    assert out.result.error_kind == "timeout" and "total deadline" in str(out.result.error_detail), out.result
    assert r.connections == 1


@pytest.mark.parametrize(
    "behaviour",
    [
        hostile.invalid_status_line(),
        hostile.header_line_too_long(),
        hostile.too_many_headers(),
        hostile.broken_gzip(),
    ],
    ids=["status", "header", "header-count", "gzip"],
)
def test_an_answer_that_is_not_http_is_an_invalid_response(
    receivers: list[hostile.HostileReceiver], behaviour: hostile.Behaviour
) -> None:
    r = serve(receivers, behaviour)
    out = send(r.url())
    assert out.result.error_kind == "invalid_response", out.result
    assert r.requests == 1


def test_a_reset_connection_is_a_network_error(receivers: list[hostile.HostileReceiver]) -> None:
    r = serve(receivers, hostile.reset_connection())
    out = send(r.url())
    assert out.result.error_kind == "network", out.result
    assert r.requests == 1


@pytest.mark.parametrize("value", ["日本", " leading", "a\rb"], ids=["non-latin-1", "leading", "cr"])
def test_a_header_the_client_cannot_send_is_an_invalid_request(receiver: Receiver, value: str) -> None:
    out = send(receiver.url("/hdr"), headers={"X-Team": value})
    assert out.result.error_kind == "invalid_request", out.result
    assert receiver.received("/hdr") == []


def test_the_callers_deadline_shortens_the_attempt(receiver: Receiver) -> None:
    receiver.script("/late", Reply(200, delay_sec=5.0))
    out = http_sender.send("POST", receiver.url("/late"), {}, b"{}", 10_000, ends_by=time.monotonic() + 1.5)
    assert out.result.error_kind == "timeout", out.result
    receiver.script("/never", Reply(200))
    over = http_sender.send("POST", receiver.url("/never"), {}, b"{}", 10_000, ends_by=time.monotonic() - 1)
    assert over.result.error_kind == "timeout" and receiver.received("/never") == []


def test_a_pooled_connection_is_not_cut_by_an_earlier_attempts_deadline(receiver: Receiver) -> None:
    """The deadline's watch ends with its attempt: the next attempt on the kept-alive connection is
    still running when the first attempt's 100 ms deadline passes, and is not cut by it."""
    receiver.script("/slow-answer", Reply(200, delay_sec=0.4))
    first = send(receiver.url("/fast"), timeout_ms=100)
    assert first.result.status_code == 200, first.result
    second = send(receiver.url("/slow-answer"), timeout_ms=5000)
    assert second.result.status_code == 200 and second.result.error_kind is None, second.result
    assert len(receiver.received("/fast")) == 1 and len(receiver.received("/slow-answer")) == 1


# --- the worker: every HTTP call is one recorded attempt, no run stays running ----------------------


def test_a_429_with_a_400_digit_retry_after_is_one_recorded_attempt(
    app_key: str, receivers: list[hostile.HostileReceiver], pump: Pump
) -> None:
    r = serve(receivers, hostile.too_many_requests("9" * 400))
    ep = make_endpoint(app_key, r.url("/busy"), retry_policy_id=fast_policy(app_key, attempts=1))
    run = create_run(app_key, ep["id"])
    pump.deliveries(quiet_for=1.0, timeout=6)
    final = get_run(app_key, run["id"])
    assert final["status"] == "dead_letter", final
    assert final["last_status_code"] == 429 and "attempts exhausted (1 of 1)" in str(final["last_error"])
    assert len(str(final["last_error"])) < 200
    assert [(a["status_code"], a["outcome"]) for a in attempts(app_key, run["id"])] == [(429, "dead_letter")]
    assert r.requests == 1


def _store_headers(endpoint_id: object, headers: object) -> None:
    """Headers an older version accepted at create, as they sit in the table."""
    model = next(m for m in EndpointModel.scan() if m.endpoint_id == endpoint_id)
    model.update(actions=[EndpointModel.headers.set(headers)])


def _store_header(endpoint_id: object, name: str, value: str) -> None:
    _store_headers(endpoint_id, {name: value})


@pytest.mark.parametrize(
    "value",
    ["日本", " leading", "trailing\t", "a\x00b", "caf\u00e9"],
    ids=["non-latin-1", "leading", "trailing", "nul", "obs-text"],
)
def test_a_stored_header_that_cannot_be_sent_fails_the_run_without_a_request(
    app_key: str, receiver: Receiver, pump: Pump, value: str
) -> None:
    ep = make_endpoint(app_key, receiver.url("/stored"), retry_policy_id=fast_policy(app_key, attempts=3))
    _store_header(ep["id"], "X-Team", value)
    run = create_run(app_key, ep["id"])
    pump.deliveries(quiet_for=1.5, timeout=8)
    final = get_run(app_key, run["id"])
    assert (final["status"], final["last_error_kind"]) == ("failed", "invalid_request"), final
    assert "X-Team" in str(final["last_error"]) and value not in str(final["last_error"])
    assert [(a["error_kind"], a["outcome"]) for a in attempts(app_key, run["id"])] == [
        ("invalid_request", "failed")
    ]
    assert receiver.received("/stored") == []


@pytest.mark.parametrize("headers", [["X-Team", "a"], {"X-Team": 5}], ids=["list", "number"])
def test_stored_headers_of_the_wrong_shape_fail_the_run_without_a_request(
    app_key: str, receiver: Receiver, pump: Pump, headers: object
) -> None:
    ep = make_endpoint(app_key, receiver.url("/shape"))
    _store_headers(ep["id"], headers)
    run = create_run(app_key, ep["id"])
    pump.deliveries(quiet_for=1.0, timeout=6)
    final = get_run(app_key, run["id"])
    assert (final["status"], final["last_error_kind"]) == ("failed", "invalid_request"), final
    assert receiver.received("/shape") == []


def test_a_stored_header_with_a_name_edgecron_sets_is_left_out(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    ep = make_endpoint(app_key, receiver.url("/reserved"))
    _store_header(ep["id"], "Edgecron-Attempt", "99")
    run = create_run(app_key, ep["id"])
    pump.deliveries()
    assert get_run(app_key, run["id"])["status"] == "success"
    [got] = receiver.received("/reserved")
    assert got.headers["edgecron-attempt"] == "1"


@dataclass
class ShortContext:
    """A Lambda context with little time left in the invocation."""

    remaining_ms: int
    function_name: str = "worker"
    memory_limit_in_mb: int = 256
    function_version: str = "$LATEST"
    aws_request_id: str = "short"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:worker"
    log_group_name: str = "/aws/lambda/test"
    log_stream_name: str = "test"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def _invoke_worker(run_id: object, remaining_ms: int) -> Any:
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "r1",
        "Body": json.dumps({"run_id": run_id, "app_id": app_of_run(str(run_id))}),
        "Attributes": {},
    }
    event = sqs_event([message], "arn:aws:sqs:us-east-1:123456789012:q")
    return load_function("worker").lambda_handler(event, ShortContext(remaining_ms))


def test_an_attempt_ends_before_the_invocation_does(app_key: str, receiver: Receiver, pump: Pump) -> None:
    """4.5 s left in the invocation, 3 s kept to record: the 10 s endpoint gets a 1.5 s attempt."""
    receiver.script("/slow", Reply(200, delay_sec=3.0))
    ep = make_endpoint(
        app_key, receiver.url("/slow"), timeout_ms=10_000, retry_policy_id=fast_policy(app_key)
    )
    run = create_run(app_key, ep["id"])
    drain_queues()
    assert _invoke_worker(run["id"], 4_500) == {"batchItemFailures": []}
    [attempt] = attempts(app_key, run["id"])
    assert attempt["error_kind"] == "timeout" and attempt["outcome"] == "retry", attempt
    assert get_run(app_key, run["id"])["status"] == "retry_scheduled"


def test_a_message_without_time_for_an_attempt_is_requeued_unclaimed(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    ep = make_endpoint(app_key, receiver.url("/later"))
    run = create_run(app_key, ep["id"])
    drain_queues()
    assert _invoke_worker(run["id"], 3_500) == {"batchItemFailures": []}
    assert receiver.received("/later") == [] and attempts(app_key, run["id"]) == []
    pending = get_run(app_key, run["id"])
    assert pending["status"] == "pending" and pending["attempt_count"] == 0
    assert pump.depth("DeliveryQueue") == 1
    pump.deliveries()
    assert get_run(app_key, run["id"])["status"] == "success"
    assert len(receiver.received("/later")) == 1
