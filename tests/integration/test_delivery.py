"""The delivery pipeline in-process: API → SQS (moto) → worker → real HTTP to a local receiver."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from standardwebhooks.webhooks import Webhook

from edgecron import clock
from edgecron.data import runs as run_data
from edgecron.domain import run_states
from edgecron_testing import faults
from edgecron_testing.harness import call_api, invoke, sqs_event
from edgecron_testing.inprocess import app_of_run, stored_run
from edgecron_testing.metrics import emitted
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def make_endpoint(key: str, url: str, **extra: object) -> dict[str, object]:
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url, **extra})
    assert resp.status == 201, resp.body
    return resp.body


def fast_policy(key: str, attempts: int = 3, **extra: object) -> str:
    body = {"strategy": "fixed", "max_attempts": attempts, "base_delay_sec": 1, "max_delay_sec": 5, **extra}
    resp = call_api("POST", "/v1/retry-policies", key=key, body=body)
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def finished(key: str, run_id: object) -> Callable[[], bool]:
    """Whether the run has reached a final status (what a test that waits for its retries waits for)."""
    return lambda: get_run(key, run_id)["status"] in run_states.TERMINAL


def create_run(key: str, endpoint_id: object, **extra: object) -> dict[str, object]:
    resp = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id, **extra})
    assert resp.status == 201, resp.body
    return resp.body


def get_run(key: str, run_id: object) -> dict[str, object]:
    return call_api("GET", f"/v1/task-runs/{run_id}", key=key).body


def attempts(key: str, run_id: object) -> list[dict[str, object]]:
    return call_api("GET", f"/v1/task-runs/{run_id}/attempts", key=key).body["data"]


def verify(secret: object, request: object) -> None:
    Webhook(str(secret)).verify(request.body, request.headers)  # type: ignore[attr-defined]


def test_200_is_one_signed_attempt(app_key: str, receiver: Receiver, pump: Pump) -> None:
    ep = make_endpoint(app_key, receiver.url("/ok"), headers={"X-Team": "billing"})
    run = create_run(app_key, ep["id"], payload={"hello": "world"})
    assert run["status"] == "pending" and run["source"] == "direct"
    pump.deliveries()
    got = receiver.received("/ok")
    assert len(got) == 1
    verify(ep["secret"], got[0])
    assert json.loads(got[0].body) == {"hello": "world"}
    assert got[0].headers["webhook-id"] == run["id"] and got[0].headers["x-team"] == "billing"
    final = get_run(app_key, run["id"])
    assert final["status"] == "success" and final["attempt_count"] == 1 and final["last_status_code"] == 200
    [attempt] = attempts(app_key, run["id"])
    assert (
        attempt["status_code"] == 200 and attempt["attempt_number"] == 1 and attempt["outcome"] == "success"
    )
    assert attempt["response_summary"] == "ok" and attempt["latency_ms"] >= 0 and attempt["request_id"]


def test_500_500_200_retries_then_succeeds_with_a_stable_webhook_id(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    receiver.script("/flaky", Reply(500), Reply(503), Reply(200))
    ep = make_endpoint(app_key, receiver.url("/flaky"), retry_policy_id=fast_policy(app_key))
    run = create_run(app_key, ep["id"])
    pump.deliveries(until=finished(app_key, run["id"]))
    got = receiver.received("/flaky")
    assert [r.headers["webhook-id"] for r in got] == [run["id"]] * 3
    for r in got:
        verify(ep["secret"], r)
    final = get_run(app_key, run["id"])
    assert final["status"] == "success" and final["attempt_count"] == 3
    assert [(a["attempt_number"], a["status_code"], a["outcome"]) for a in attempts(app_key, run["id"])] == [
        (1, 500, "retry"),
        (2, 503, "retry"),
        (3, 200, "success"),
    ]
    gap = got[1].at - got[0].at
    assert 0.9 <= gap < 4, gap  # the 1 s fixed backoff, not the 300 s default


def test_a_first_attempt_that_succeeds_is_kept_in_the_run_item(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    """The first Attempt rides on the run's result update: no Attempt item, one write less."""
    from edgecron.data.models import AttemptModel

    ep = make_endpoint(app_key, receiver.url("/inline"))
    run = create_run(app_key, ep["id"])
    pump.deliveries()
    assert list(AttemptModel.query(str(run["id"]), consistent_read=True)) == []
    stored = stored_run(str(run["id"]))
    assert stored is not None and stored.first_attempt is not None and stored.first_attempt.status_code == 200
    [attempt] = attempts(app_key, run["id"])
    assert (attempt["sequence"], attempt["status_code"], attempt["outcome"]) == (1, 200, "success")
    assert attempt["response_summary"] == "ok"


def test_a_large_first_response_is_an_attempt_item(app_key: str, receiver: Receiver, pump: Pump) -> None:
    """A summary too large for the run item goes to the Attempts table, listed the same way."""
    from edgecron.data.models import AttemptModel

    receiver.script("/large", Reply(200, body=b"y" * 900))
    ep = make_endpoint(app_key, receiver.url("/large"))
    run = create_run(app_key, ep["id"])
    pump.deliveries()
    stored = stored_run(str(run["id"]))
    assert stored is not None and stored.first_attempt is None
    assert [int(a.seq) for a in AttemptModel.query(str(run["id"]), consistent_read=True)] == [1]
    [attempt] = attempts(app_key, run["id"])
    assert attempt["sequence"] == 1 and str(attempt["response_summary"]).startswith("yyy")


@pytest.mark.parametrize("limit", [1, 2, 3, 50])
def test_attempt_pages_list_every_attempt_once_in_order(
    limit: int, app_key: str, receiver: Receiver, pump: Pump
) -> None:
    """The first Attempt (in the run item) and the later ones (Attempts table) page as one list."""
    receiver.script("/pages", Reply(500), Reply(503), Reply(200))
    ep = make_endpoint(app_key, receiver.url("/pages"), retry_policy_id=fast_policy(app_key))
    run = create_run(app_key, ep["id"])
    pump.deliveries(until=finished(app_key, run["id"]))
    seen: list[int] = []
    cursor: str | None = None
    for _ in range(10):
        query = {"limit": str(limit)} | ({"cursor": cursor} if cursor else {})
        body = call_api("GET", f"/v1/task-runs/{run['id']}/attempts", key=app_key, query=query).body
        assert len(body["data"]) <= limit
        seen.extend(int(a["sequence"]) for a in body["data"])
        cursor = body["next_cursor"]
        if not cursor:
            break
    assert seen == [1, 2, 3]


def test_400_is_terminal_after_one_attempt(app_key: str, receiver: Receiver, pump: Pump) -> None:
    receiver.script("/bad", Reply(400, b'{"error":"nope"}'))
    ep = make_endpoint(app_key, receiver.url("/bad"), retry_policy_id=fast_policy(app_key))
    run = create_run(app_key, ep["id"])
    pump.deliveries(quiet_for=1.5)
    final = get_run(app_key, run["id"])
    assert final["status"] == "failed" and final["attempt_count"] == 1
    assert final["last_error_kind"] == "http_4xx"
    assert attempts(app_key, run["id"])[0]["response_summary"] == '{"error":"nope"}'
    assert len(receiver.received("/bad")) == 1


@pytest.mark.parametrize("retry_after", ["1", "date"])
def test_429_with_retry_after_is_retried_after_the_delay(
    app_key: str, receiver: Receiver, pump: Pump, retry_after: str
) -> None:
    value = (
        "1" if retry_after == "1" else format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    )
    receiver.script("/busy", Reply(429, headers={"Retry-After": value}), Reply(200))
    ep = make_endpoint(app_key, receiver.url("/busy"), retry_policy_id=fast_policy(app_key))
    run = create_run(app_key, ep["id"])
    pump.deliveries(until=finished(app_key, run["id"]))
    got = receiver.received("/busy")
    assert len(got) == 2
    assert got[1].at - got[0].at >= 0.9
    assert get_run(app_key, run["id"])["status"] == "success"


def test_429_without_retry_after_is_terminal(app_key: str, receiver: Receiver, pump: Pump) -> None:
    receiver.script("/busy2", Reply(429))
    ep = make_endpoint(app_key, receiver.url("/busy2"), retry_policy_id=fast_policy(app_key))
    run = create_run(app_key, ep["id"])
    pump.deliveries(quiet_for=1.5)
    final = get_run(app_key, run["id"])
    assert (
        final["status"] == "failed" and final["attempt_count"] == 1 and "Retry-After" in final["last_error"]
    )


def test_timeout_is_retried_and_redirects_are_not_followed(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    receiver.script("/slow", Reply(200, delay_sec=1.0), Reply(200))
    receiver.script("/moved", Reply(302, headers={"Location": receiver.url("/ok")}))
    slow = make_endpoint(app_key, receiver.url("/slow"), timeout_ms=300, retry_policy_id=fast_policy(app_key))
    moved = make_endpoint(app_key, receiver.url("/moved"))
    run_slow = create_run(app_key, slow["id"])
    run_moved = create_run(app_key, moved["id"])
    pump.deliveries(
        until=lambda: finished(app_key, run_slow["id"])() and finished(app_key, run_moved["id"])()
    )
    first = attempts(app_key, run_slow["id"])[0]
    assert first["error_kind"] == "timeout" and first["outcome"] == "retry"
    assert get_run(app_key, run_slow["id"])["status"] == "success"
    final = get_run(app_key, run_moved["id"])
    assert final["status"] == "failed" and final["last_status_code"] == 302
    assert receiver.received("/ok") == []


def test_exhaustion_dead_letter_then_replay_succeeds(app_key: str, receiver: Receiver, pump: Pump) -> None:
    receiver.script("/down", Reply(500), Reply(500), Reply(200))
    ep = make_endpoint(app_key, receiver.url("/down"), retry_policy_id=fast_policy(app_key, attempts=2))
    run = create_run(app_key, ep["id"])
    pump.deliveries(until=finished(app_key, run["id"]))
    dead = get_run(app_key, run["id"])
    assert dead["status"] == "dead_letter" and "attempts exhausted (2 of 2)" in dead["last_error"]
    listed = call_api("GET", "/v1/dead-letters", key=app_key, query={"endpoint_id": str(ep["id"])}).body[
        "data"
    ]
    assert [d["id"] for d in listed] == [run["id"]]
    replayed = call_api("POST", f"/v1/dead-letters/{run['id']}/replay", key=app_key)
    assert replayed.status == 200 and replayed.body["status"] == "pending" and replayed.body["series"] == 2
    pump.deliveries(quiet_for=1.0)
    final = get_run(app_key, run["id"])
    assert final["status"] == "success"
    history = attempts(app_key, run["id"])
    assert [(a["series"], a["attempt_number"], a["status_code"]) for a in history] == [
        (1, 1, 500),
        (1, 2, 500),
        (2, 1, 200),
    ]
    assert call_api("GET", "/v1/dead-letters", key=app_key).body["data"] == []
    again = call_api("POST", f"/v1/dead-letters/{run['id']}/replay", key=app_key)
    assert again.status == 409


def test_bulk_replay_by_filter(app_key: str, receiver: Receiver, pump: Pump) -> None:
    receiver.script("/bulk", Reply(500), Reply(500), Reply(500), Reply(200))
    ep = make_endpoint(app_key, receiver.url("/bulk"), retry_policy_id=fast_policy(app_key, attempts=1))
    other = make_endpoint(
        app_key, receiver.url("/bulk-other"), retry_policy_id=fast_policy(app_key, attempts=1)
    )
    receiver.script("/bulk-other", Reply(503))
    runs = [create_run(app_key, ep["id"]) for _ in range(3)]
    other_run = create_run(app_key, other["id"])
    pump.deliveries(quiet_for=1.0)
    assert all(get_run(app_key, r["id"])["status"] == "dead_letter" for r in [*runs, other_run])
    resp = call_api(
        "POST",
        "/v1/dead-letters/replay",
        key=app_key,
        body={"endpoint_id": ep["id"], "error_kind": "http_5xx"},
    )
    assert resp.status == 200 and resp.body == {
        "replayed": 3,
        "skipped": 0,
        "has_more": False,
        "next_cursor": None,
    }
    pump.deliveries(quiet_for=1.0)
    assert get_run(app_key, other_run["id"])["status"] == "dead_letter"
    assert {get_run(app_key, r["id"])["series"] for r in runs} == {2}


def test_cancel_of_a_delayed_run_is_never_delivered(app_key: str, receiver: Receiver, pump: Pump) -> None:
    ep = make_endpoint(app_key, receiver.url("/later"))
    start = datetime.now(UTC)
    fixed = clock.FixedClock(start)
    clock.set_clock(fixed)
    run = create_run(app_key, ep["id"], delay_sec=600)
    assert run["status"] == "pending" and run["deliver_at"] is not None
    cancelled = call_api("POST", f"/v1/task-runs/{run['id']}/cancel", key=app_key)
    assert cancelled.status == 200 and cancelled.body["status"] == "cancelled"
    fixed.advance(600)
    invoke("scan", {"detail-type": "Scheduled Event", "detail": {}})
    pump.deliveries()
    assert receiver.received("/later") == []
    assert call_api("POST", f"/v1/task-runs/{run['id']}/cancel", key=app_key).status == 409


def test_a_delayed_run_is_dispatched_by_the_scan_when_due(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    ep = make_endpoint(app_key, receiver.url("/due"))
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    run = create_run(app_key, ep["id"], delay_sec=3600)
    invoke("scan", {"detail": {}})
    assert pump.deliveries() == 0
    fixed.advance(3600 - 2)  # due in 2 s: inside the look-ahead window, sent with DelaySeconds=2
    invoke("scan", {"detail": {}})
    fixed.advance(2)
    assert pump.depth("DeliveryQueue") == 1
    assert pump.deliveries() == 0  # not visible before its due time
    pump.deliveries(quiet_for=3, timeout=10)
    assert get_run(app_key, run["id"])["status"] == "success"
    invoke("scan", {"detail": {}})  # nothing left to do, no duplicate
    assert pump.deliveries() == 0 and len(receiver.received("/due")) == 1


def test_cancel_after_enqueue_drops_the_message(app_key: str, receiver: Receiver, pump: Pump) -> None:
    ep = make_endpoint(app_key, receiver.url("/c"))
    run = create_run(app_key, ep["id"], delay_sec=1)
    assert call_api("POST", f"/v1/task-runs/{run['id']}/cancel", key=app_key).status == 200
    pump.deliveries(quiet_for=1.5)
    assert receiver.received("/c") == []
    assert get_run(app_key, run["id"])["status"] == "cancelled"


def test_the_same_message_twice_gives_one_attempt(app_key: str, receiver: Receiver, pump: Pump) -> None:
    ep = make_endpoint(app_key, receiver.url("/dup"))
    run = create_run(app_key, ep["id"])
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "r1",
        "Body": json.dumps({"run_id": run["id"], "app_id": app_of_run(str(run["id"]))}),
        "Attributes": {},
    }
    duplicate = {**message, "MessageId": "m2", "ReceiptHandle": "r2"}
    result = invoke("worker", sqs_event([message, duplicate], "arn:aws:sqs:us-east-1:123456789012:q"))
    assert result == {"batchItemFailures": []}
    pump.deliveries()
    assert len(receiver.received("/dup")) == 1
    assert len(attempts(app_key, run["id"])) == 1


class WorkerDied(BaseException):
    """Stands for a Lambda runtime killed mid-invocation: nothing after the HTTP call runs."""


def _deliver_then_die(run_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the real delivery of `run_id` (claim, signed HTTP call) and die before the run's update that
    stores its result. A first Attempt that fits in the run item rides on that update, so it is lost
    with it; a larger one is stored in the Attempts table before it, and survives."""
    from edgecron.services import delivery

    target = (delivery.run_data, "finish")

    def die(*args: object, **kwargs: object) -> None:
        raise WorkerDied

    with monkeypatch.context() as patch:
        patch.setattr(*target, die)
        with pytest.raises(WorkerDied):
            delivery.deliver(run_id, app_of_run(run_id))


def _run_whose_message_is_lost(app_key: str, url: str) -> tuple[clock.FixedClock, str]:
    """A direct run under a fixed clock, its queued message gone (with a worker that is about to die)."""
    from tests.integration.conftest import drain_queues

    ep = make_endpoint(app_key, url)
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    run_id = str(create_run(app_key, ep["id"])["id"])
    drain_queues()
    return fixed, run_id


def test_a_worker_killed_mid_delivery_is_recovered(
    app_key: str, receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker sent the request and died with its message: a run sent at its creation has no wake
    entry, the scan's check of recent runs gives it the one it would have had (due +
    REDISPATCH_AFTER_SEC) when that enters the look-ahead window, finds its claim expired, records the
    lost attempt and makes the run deliverable again."""
    fixed, run_id = _run_whose_message_is_lost(app_key, receiver.url("/crash"))
    _deliver_then_die(run_id, monkeypatch)
    assert len(receiver.received("/crash")) == 1  # the request went out
    stored = stored_run(run_id)
    assert stored is not None and stored.wake_shard is None and stored.wake_at is None  # no entry
    assert get_run(app_key, run_id)["status"] == "running"
    assert attempts(app_key, run_id) == []
    invoke("scan", {"detail": {}})  # claim not expired yet: nothing happens
    assert pump.deliveries() == 0
    fixed.advance(61)
    invoke("scan", {"detail": {}})  # claim expired, but the run's wake time is not in the window yet
    assert pump.deliveries() == 0 and get_run(app_key, run_id)["status"] == "running"
    fixed.advance(300 - 70 - 61)  # the wake time enters the scan's look-ahead window
    report = invoke("scan", {"detail": {}})
    assert report["claims_released"] == 1, report
    report = invoke("scan", {"detail": {}})  # a second scan changes nothing
    assert report["claims_released"] == 0, report
    pump.deliveries()
    final = get_run(app_key, run_id)
    assert final["status"] == "success" and final["attempt_count"] == 2
    assert len(receiver.received("/crash")) == 2
    history = attempts(app_key, run_id)  # one Attempt per HTTP call
    assert [(a["attempt_number"], a["status_code"], a["error_kind"]) for a in history] == [
        (1, None, "worker_lost"),
        (2, 200, None),
    ]
    assert "may or may not have reached the endpoint" in str(history[0]["error"])
    done = stored_run(run_id)
    assert done is not None and done.wake_at is None and done.wake_shard is None  # out of the index
    assert done.claimed_from is None


def _fail_the_claim_release(f: faults.Faults, run_id: str, kind: str) -> None:
    """Fail (as `kind`) the scan's write that releases the expired claim of `run_id`."""
    f.on(
        "dynamodb",
        "UpdateItem",
        kind=kind,
        function="scan",
        table="RunsTable",
        when=lambda call: (
            run_id in str(call.params)
            and "REMOVE" in str(call.params.get("UpdateExpression"))
            and "claim_token" in str(call.params.get("ExpressionAttributeNames"))
        ),
    )


def test_a_scan_killed_right_after_releasing_an_expired_claim_leaves_the_lost_attempt_recorded(
    app_key: str, receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan releases the claim of a worker that died mid-delivery and dies at its next call: the
    HTTP call the dead worker made is still in the run's history."""
    fixed, run_id = _run_whose_message_is_lost(app_key, receiver.url("/scan-killed"))
    _deliver_then_die(run_id, monkeypatch)
    fixed.advance(300 - 70)  # the claim expired and the wake time is in the scan's look-ahead window
    with faults.Faults() as f:
        _fail_the_claim_release(f, run_id, faults.KILL_AFTER)
        with pytest.raises(faults.InvocationKilled):
            invoke("scan", {"detail": {}})
    assert f.count(faults.KILL_AFTER) == 1
    fixed.advance(300)  # the released run's message was never sent: its wake time comes
    invoke("scan", {"detail": {}})
    pump.deliveries()
    assert get_run(app_key, run_id)["status"] == "success"
    assert len(receiver.received("/scan-killed")) == 2
    history = attempts(app_key, run_id)  # one Attempt per HTTP call
    assert [(a["attempt_number"], a["error_kind"]) for a in history] == [(1, "worker_lost"), (2, None)]


def test_a_lost_attempt_recorded_by_two_ticks_is_counted_once_in_the_metric(
    app_key: str,
    receiver: Receiver,
    pump: Pump,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The scan records a dead worker's lost attempt, then its release of the claim is throttled; the
    next tick records the same attempt again (a no-op: it is written once) and releases the claim.
    The AttemptsLost metric counts the one HTTP call once, as the history does."""
    fixed, run_id = _run_whose_message_is_lost(app_key, receiver.url("/lost-twice"))
    _deliver_then_die(run_id, monkeypatch)
    emitted(capsys)  # what came before
    fixed.advance(300 - 70)
    with faults.Faults() as f:
        _fail_the_claim_release(f, run_id, faults.BEFORE)
        invoke("scan", {"detail": {}})
    assert f.count(faults.BEFORE) == 1
    fixed.advance(60)
    invoke("scan", {"detail": {}})
    fixed.advance(300)
    invoke("scan", {"detail": {}})
    pump.deliveries()
    assert get_run(app_key, run_id)["status"] == "success"
    history = attempts(app_key, run_id)
    assert [(a["attempt_number"], a["error_kind"]) for a in history] == [(1, "worker_lost"), (2, None)]
    assert emitted(capsys).get("AttemptsLost") == 1


@pytest.mark.parametrize("after_record", [False, True], ids=["before-record", "after-record"])
def test_a_redelivered_message_takes_over_an_expired_claim(
    after_record: bool, app_key: str, receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On AWS the dead worker's message comes back after the visibility timeout and a worker takes the
    expired claim over: it records the lost attempt, unless the dead worker had recorded it already."""
    if after_record:  # a response too large to keep in the run item: the Attempt is stored first
        receiver.script("/takeover", Reply(200, body=b"x" * 600), Reply(200))
    fixed, run_id = _run_whose_message_is_lost(app_key, receiver.url("/takeover"))
    _deliver_then_die(run_id, monkeypatch)
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "r1",
        "Body": json.dumps({"run_id": run_id, "app_id": app_of_run(run_id)}),
        "Attributes": {},
    }
    queue = "arn:aws:sqs:us-east-1:123456789012:q"
    assert invoke("worker", sqs_event([message], queue)) == {"batchItemFailures": []}
    assert len(receiver.received("/takeover")) == 1  # the claim is still held: the message is dropped
    fixed.advance(61)  # the visibility timeout is longer than the claim: the claim has expired
    assert invoke("worker", sqs_event([message], queue)) == {"batchItemFailures": []}
    assert get_run(app_key, run_id)["status"] == "success"
    assert len(receiver.received("/takeover")) == 2
    history = attempts(app_key, run_id)
    first = (1, 200, None) if after_record else (1, None, "worker_lost")
    assert [(a["attempt_number"], a["status_code"], a["error_kind"]) for a in history] == [
        first,
        (2, 200, None),
    ]


def test_a_claim_that_outlives_the_wake_time_is_looked_at_again_when_it_expires(
    app_key: str, receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rare path: a claim longer than the look-ahead, taken late (its message came back after the
    run's wake time). The scan moves the wake time to the claim's expiry instead of releasing it, and
    releases it once it expired (the worker died and its message is gone)."""
    from edgecron.config import get_settings

    monkeypatch.setattr(get_settings(), "claim_sec", 600)
    fixed, run_id = _run_whose_message_is_lost(app_key, receiver.url("/late-claim"))
    fixed.advance(290)  # a worker claims just before the run's wake time, then dies
    claimed = run_data.claim(app_of_run(run_id), run_id, clock.to_ms(fixed.now()))
    assert claimed is not None and claimed.claim_expires_at == clock.to_ms(fixed.now()) + 600_000
    report = invoke("scan", {"detail": {}})  # woken: claimed, not expired, beyond the window
    assert report["claims_released"] == 0 and report["runs_enqueued"] == 0, report
    stored = run_data.get(app_of_run(run_id), run_id, consistent=True)
    assert stored is not None and stored.wake_at == claimed.claim_expires_at
    fixed.advance(300)
    report = invoke("scan", {"detail": {}})  # the claim's expiry is not in the window yet
    assert report["claims_released"] == 0 and pump.deliveries() == 0
    fixed.advance(301)
    report = invoke("scan", {"detail": {}})
    assert report["claims_released"] == 1, report
    pump.deliveries()
    assert get_run(app_key, run_id)["status"] == "success"
    assert len(receiver.received("/late-claim")) == 1


def test_a_batch_is_delivered_concurrently(app_key: str, receiver: Receiver, pump: Pump) -> None:
    """The receiver answers none of the batch's requests until all ten are open at once, which only
    a worker sending them concurrently achieves (one sending them in turn stays at one open)."""
    receiver.script("/together", Reply(200, together=10))
    ep = make_endpoint(app_key, receiver.url("/together"), timeout_ms=25_000)
    runs = [create_run(app_key, ep["id"])["id"] for _ in range(10)]
    assert pump.once("DeliveryQueue", "worker") == 10
    assert len(receiver.received("/together")) == 10
    assert receiver.max_in_flight("/together") == 10
    assert {get_run(app_key, run_id)["status"] for run_id in runs} == {"success"}


def test_signatures_verify_before_and_after_rotation(app_key: str, receiver: Receiver, pump: Pump) -> None:
    ep = make_endpoint(app_key, receiver.url("/sig"))
    create_run(app_key, ep["id"])
    pump.deliveries()
    rotated = call_api("POST", f"/v1/endpoints/{ep['id']}/rotate-secret", key=app_key).body
    create_run(app_key, ep["id"])
    pump.deliveries()
    before, after = receiver.received("/sig")
    verify(ep["secret"], before)
    verify(ep["secret"], after)  # the old secret still verifies for 24 h
    verify(rotated["secret"], after)
    with pytest.raises(Exception):
        verify(rotated["secret"], before)
    assert len(after.headers["webhook-signature"].split(" ")) == 2


def test_secrets_sealed_together_cost_one_kms_call_to_sign_with(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    """Envelope encryption: the API seals each secret with its container's data key, so a worker
    signing for many Endpoints decrypts that one data key, not one secret per delivery."""
    from edgecron.data.aws import client

    kms_calls: list[str] = []

    def seen(event_name: str, **_: object) -> None:
        kms_calls.append(event_name.rsplit(".", 1)[-1])

    events = client("kms").meta.events
    events.register("before-call.kms", seen)
    try:
        endpoints = [make_endpoint(app_key, receiver.url(f"/env-{i}")) for i in range(4)]
        for ep in endpoints:
            create_run(app_key, ep["id"])
        pump.deliveries()
    finally:
        events.unregister("before-call.kms", seen)
    for i, ep in enumerate(endpoints):
        [request] = receiver.received(f"/env-{i}")
        verify(ep["secret"], request)
    assert "Encrypt" not in kms_calls
    assert kms_calls.count("GenerateDataKey") <= 1 and kms_calls.count("Decrypt") <= 1, kms_calls


def test_a_secret_sealed_by_kms_alone_still_signs(app_key: str, receiver: Receiver, pump: Pump) -> None:
    """Secrets stored before data keys (`kms:` + a KMS ciphertext) keep working."""
    import base64

    from edgecron.config import get_settings
    from edgecron.data import secret_box
    from edgecron.data.aws import client
    from edgecron.data.models import EndpointModel

    ep = make_endpoint(app_key, receiver.url("/legacy"))
    stored = next(e for e in EndpointModel.scan() if e.endpoint_id == ep["id"])
    blob = client("kms").encrypt(
        KeyId=get_settings().secrets_kms_key_id,
        Plaintext=str(ep["secret"]).encode(),
        EncryptionContext=secret_box.CONTEXT,
    )["CiphertextBlob"]
    stored.secrets[0].secret = secret_box.PREFIX + base64.b64encode(blob).decode()
    stored.save()
    create_run(app_key, ep["id"])
    pump.deliveries()
    [request] = receiver.received("/legacy")
    verify(ep["secret"], request)


def test_inactive_or_deleted_endpoint_is_a_terminal_failure(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    ep = make_endpoint(app_key, receiver.url("/gone"))
    run = create_run(app_key, ep["id"], delay_sec=1)
    call_api("PATCH", f"/v1/endpoints/{ep['id']}", key=app_key, body={"active": False})
    pump.deliveries(quiet_for=1.5)
    final = get_run(app_key, run["id"])
    assert final["status"] == "failed" and final["last_error_kind"] == "endpoint_inactive"
    assert receiver.received("/gone") == []
    assert call_api("POST", "/v1/task-runs", key=app_key, body={"endpoint_id": ep["id"]}).status == 409


def test_poison_message_in_the_dlq_dead_letters_its_run(app_key: str, receiver: Receiver) -> None:
    """A due run whose message SQS gave up on (healthy runs: tests/integration/test_poison.py)."""
    from tests.integration.conftest import drain_queues

    ep = make_endpoint(app_key, receiver.url("/p"))
    run = create_run(app_key, ep["id"])
    drain_queues()
    body = json.dumps({"run_id": run["id"], "app_id": app_of_run(str(run["id"]))})
    msgs = [
        {
            "MessageId": "a",
            "ReceiptHandle": "a",
            "Body": body,
            "Attributes": {"ApproximateReceiveCount": "5"},
        },
        {"MessageId": "b", "ReceiptHandle": "b", "Body": "not json", "Attributes": {}},
    ]
    result = invoke("dlq", sqs_event(msgs, "arn:aws:sqs:us-east-1:123456789012:dlq"))
    assert result == {"batchItemFailures": []}
    final = get_run(app_key, run["id"])
    assert final["status"] == "dead_letter" and final["last_error_kind"] == "poison"
    assert "5 times" in final["last_error"]


def test_malformed_message_fails_its_record_only(app_key: str, receiver: Receiver) -> None:
    ep = make_endpoint(app_key, receiver.url("/m"))
    run = create_run(app_key, ep["id"])
    msgs = [
        {
            "MessageId": "good",
            "ReceiptHandle": "g",
            "Body": json.dumps({"run_id": run["id"], "app_id": app_of_run(str(run["id"]))}),
            "Attributes": {},
        },
        {"MessageId": "bad", "ReceiptHandle": "b", "Body": "{", "Attributes": {}},
    ]
    result = invoke("worker", sqs_event(msgs, "arn:aws:sqs:us-east-1:123456789012:q"))
    assert result == {"batchItemFailures": [{"itemIdentifier": "bad"}]}
    assert get_run(app_key, run["id"])["status"] == "success"


# Index lag off: the run list reads the `by_app` index, which shows a run created a moment ago
# only once the index caught up (as in DynamoDB); this test lists right after creating.
@pytest.mark.index_lag(0)
def test_task_run_validation_and_isolation(app_key: str, other_app_key: str, receiver: Receiver) -> None:
    ep = make_endpoint(app_key, receiver.url("/v"))
    for body, status, field in [
        ({"endpoint_id": ep["id"], "delay_sec": 5, "deliver_at": "2030-01-01T00:00:00Z"}, 400, "delay_sec"),
        ({"endpoint_id": ep["id"], "delay_sec": -1}, 400, "delay_sec"),
        ({"endpoint_id": ep["id"], "deliver_at": "tomorrow"}, 400, "deliver_at"),
        ({"endpoint_id": ep["id"], "deliver_at": "2030-01-01T00:00:00"}, 400, "deliver_at"),
        ({"endpoint_id": "ep_NOPE"}, 404, "endpoint_id"),
        ({"endpoint_id": ep["id"], "payload": "x" * 300_000}, 413, "payload"),
    ]:
        resp = call_api("POST", "/v1/task-runs", key=app_key, body=body)
        assert resp.status == status and resp.body["error"]["field"] == field, (body, resp.body)
    assert call_api("GET", "/v1/task-runs", key=app_key).body["data"] == []
    run = create_run(app_key, ep["id"], delay_sec=600)
    assert call_api("POST", "/v1/task-runs", key=other_app_key, body={"endpoint_id": ep["id"]}).status == 404
    for method, path in [
        ("GET", f"/v1/task-runs/{run['id']}"),
        ("POST", f"/v1/task-runs/{run['id']}/cancel"),
        ("GET", f"/v1/task-runs/{run['id']}/attempts"),
        ("POST", f"/v1/dead-letters/{run['id']}/replay"),
    ]:
        assert call_api(method, path, key=other_app_key).status == 404, path
    assert call_api("GET", "/v1/task-runs", key=other_app_key).body["data"] == []
    listed = call_api("GET", "/v1/task-runs", key=app_key, query={"status": "pending", "source": "direct"})
    assert [r["id"] for r in listed.body["data"]] == [run["id"]]
    assert call_api("GET", "/v1/task-runs", key=app_key, query={"status": "bogus"}).status == 400
