"""Events: publish (202), filtered fan-out to real receivers, usage and quotas, idempotency,
fan-out at scale with duplicated messages and crashes, validation and tenant isolation."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import TypeAdapter
from standardwebhooks.webhooks import Webhook

from edgecron import clock, ids
from edgecron.data import events as event_data
from edgecron.data import runs as run_data
from edgecron.data.models import EndpointModel, EventModel, TaskRunModel
from edgecron.schemas.messages import EventPage, FanoutBody
from edgecron.services import events as event_service
from edgecron.services import fanout
from edgecron.sqs_batch import BatchFailed
from edgecron_testing.harness import call_api, invoke, sqs_event
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import ADMIN_KEY, Pump, app_runs, drain_queues, new_app, queue

FANOUT_BODY: TypeAdapter[FanoutBody] = TypeAdapter(FanoutBody)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def endpoint(key: str, url: str, filters: list[str], **extra: Any) -> dict[str, Any]:
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url, "filter_events": filters, **extra})
    assert resp.status == 201, resp.body
    return dict(resp.body)


def publish(key: str, name: str, payload: Any = None, **kwargs: Any) -> Any:
    return call_api("POST", "/v1/events", key=key, body={"name": name, "payload": payload}, **kwargs)


def published(key: str, name: str, payload: Any = None) -> dict[str, Any]:
    resp = publish(key, name, payload)
    assert resp.status == 202, resp.body
    return dict(resp.body)


def fan_out_all(pump: Pump) -> int:
    """Run the fan-out function one message at a time until its queue is empty."""
    pages = 0
    while pump.once("FanoutQueue", "fanout", batch=1):
        pages += 1
    return pages


def usage(key: str) -> dict[str, Any]:
    resp = call_api("GET", "/v1/usage", key=key)
    assert resp.status == 200, resp.body
    return dict(resp.body)


def events_of(key: str, **query: str) -> list[dict[str, Any]]:
    resp = call_api("GET", "/v1/events", key=key, query=query or None)
    assert resp.status == 200, resp.body
    return list(resp.body["data"])


@pytest.mark.index_lag(0)  # lists every run right after the fan-out created it: reads the by_app index
def test_filters_route_each_event_to_exactly_the_matching_endpoints(receiver: Receiver, pump: Pump) -> None:
    app_id, key = new_app("filters")
    invoices = endpoint(key, receiver.url("/invoices"), ["invoice.*"])
    everything = endpoint(key, receiver.url("/all"), ["*"])
    users = endpoint(key, receiver.url("/users"), ["user.created"])
    endpoint(key, receiver.url("/none"), [])  # schedule and direct runs only
    endpoint(key, receiver.url("/inactive"), ["*"], active=False)
    signed = {"/invoices": invoices, "/all": everything, "/users": users}

    names = ["invoice.paid", "user.created", "user.deleted", "invoice.paid.late", "invoice"]
    events = [published(key, name, {"n": i}) for i, name in enumerate(names)]
    assert all(e["fanout_status"] == "pending" and e["matched_endpoints"] == 0 for e in events)
    assert fan_out_all(pump) == len(names)  # 5 endpoints fit in one page each
    pump.deliveries()

    def got(path: str) -> list[str]:
        return sorted(json.loads(r.body)["type"] for r in receiver.received(path))

    assert got("/invoices") == ["invoice.paid"]  # not invoice.paid.late, not invoice
    assert got("/all") == sorted(names)
    assert got("/users") == ["user.created"]
    assert receiver.received("/none") == [] and receiver.received("/inactive") == []
    for path, ep in signed.items():
        for request in receiver.received(path):
            Webhook(ep["secret"]).verify(request.body, request.headers)
            body = json.loads(request.body)
            event = events[names.index(body["type"])]
            assert body == {
                "type": event["name"],
                "timestamp": event["created_at"],
                "event_id": event["id"],
                "data": event["payload"],
            }
            assert request.headers["webhook-id"] == event_service.run_id_for(event["id"], ep["id"])

    first = call_api("GET", f"/v1/events/{events[0]['id']}", key=key).body
    assert first["fanout_status"] == "done" and first["matched_endpoints"] == 2
    assert first["payload"] == {"n": 0} and first["deliveries_next_cursor"] is None
    assert {d["endpoint_id"] for d in first["deliveries"]} == {invoices["id"], everything["id"]}
    for d in first["deliveries"]:
        assert d["task_run_id"] == event_service.run_id_for(events[0]["id"], d["endpoint_id"])
        assert d["status"] == "success" and d["attempt_count"] == 1 and d["last_status_code"] == 200
        run = call_api("GET", f"/v1/task-runs/{d['task_run_id']}", key=key).body
        assert run["source"] == "event" and run["source_id"] == events[0]["id"]
        [attempt] = call_api("GET", f"/v1/task-runs/{d['task_run_id']}/attempts", key=key).body["data"]
        assert attempt["status_code"] == 200 and attempt["attempt_number"] == 1
    unmatched = call_api("GET", f"/v1/events/{events[4]['id']}", key=key).body  # "invoice": only `*`
    assert unmatched["fanout_status"] == "done" and [d["endpoint_id"] for d in unmatched["deliveries"]] == [
        everything["id"]
    ]

    # each endpoint has its own runs, one per matched event
    listed = call_api("GET", "/v1/task-runs", key=key, query={"source": "event", "limit": "100"}).body["data"]
    assert len(listed) == 1 + 5 + 1
    assert len({r["id"] for r in listed}) == 7
    assert usage(key)["event"] == len(names) and usage(key)["total"] == len(names)
    assert len(event_runs(app_id, events[1]["id"])) == 2  # user.created: `*` and `user.created`


def test_publish_answers_202_at_once_and_events_list_newest_first(pump: Pump) -> None:
    _, key = new_app("list")
    start = datetime.now(UTC)
    fixed = clock.FixedClock(start)
    clock.set_clock(fixed)
    first = published(key, "invoice.paid", {"amount": 10})
    fixed.advance(60)
    second = published(key, "user.created", {"id": "u1"})
    fixed.advance(60)
    third = published(key, "invoice.paid", {"amount": 30})
    assert first["id"].startswith("evt_") and first["payload"] == {"amount": 10}
    assert first["idempotency_key"] is None and first["created_at"] == clock.iso(start)

    pending = call_api("GET", f"/v1/events/{first['id']}", key=key).body
    assert pending["fanout_status"] == "pending" and pending["deliveries"] == []

    everything = events_of(key)
    assert [e["id"] for e in everything] == [third["id"], second["id"], first["id"]]
    assert "payload" not in everything[0]
    assert [e["id"] for e in events_of(key, name="invoice.paid")] == [third["id"], first["id"]]
    since = clock.iso(start + timedelta(seconds=30))
    until = clock.iso(start + timedelta(seconds=90))
    assert [e["id"] for e in events_of(key, since=str(since))] == [third["id"], second["id"]]
    assert [e["id"] for e in events_of(key, until=str(until))] == [second["id"], first["id"]]
    assert [e["id"] for e in events_of(key, since=str(since), until=str(until))] == [second["id"]]
    exact = str(clock.iso(start))
    assert [e["id"] for e in events_of(key, since=exact, until=exact)] == [first["id"]]

    seen: list[str] = []
    cursor = None
    while True:
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = call_api("GET", "/v1/events", key=key, query=query).body
        seen += [e["id"] for e in page["data"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [third["id"], second["id"], first["id"]]

    for bad in (
        {"since": "yesterday"},
        {"since": "2030-01-01T00:00:00"},
        {"since": str(until), "until": str(since)},
        {"name": "inv*"},
        {"limit": "0"},
        {"cursor": "garbage!"},
    ):
        assert call_api("GET", "/v1/events", key=key, query=bad).status == 400, bad

    # expired events are not listed (DynamoDB deletes them lazily; moto never does)
    fixed.advance(91 * 86_400)
    assert events_of(key) == []
    assert call_api("GET", f"/v1/events/{first['id']}", key=key).status == 404


def test_a_repeated_idempotency_key_returns_the_original_and_fans_out_nothing_new(
    receiver: Receiver, pump: Pump
) -> None:
    app_id, key = new_app("idem")
    endpoint(key, receiver.url("/idem"), ["order.*"])
    headers = {"Idempotency-Key": "order-42"}
    first = publish(key, "order.placed", {"id": 42}, headers=headers)
    fan_out_all(pump)
    pump.deliveries()
    again = publish(key, "order.placed", {"id": 42}, headers=headers)
    assert first.status == again.status == 202
    assert again.body == first.body and again.headers.get("idempotent-replayed") == "true"
    assert first.body["idempotency_key"] == "order-42"
    assert pump.depth("FanoutQueue") == 0 and fan_out_all(pump) == 0
    pump.deliveries()
    assert len(receiver.received("/idem")) == 1
    assert [e["id"] for e in events_of(key)] == [first.body["id"]]
    assert usage(key)["event"] == 1

    other = publish(key, "order.placed", {"id": 43}, headers=headers)
    assert other.status == 409 and other.body["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    renamed = publish(key, "order.cancelled", {"id": 42}, headers=headers)
    assert renamed.status == 409
    assert len(events_of(key)) == 1 and usage(key)["event"] == 1 and pump.depth("FanoutQueue") == 0
    # the same key in another App is another key
    _, other_key = new_app("idem-other")
    assert publish(other_key, "order.placed", {"id": 42}, headers=headers).status == 202
    assert len(event_runs(app_id, first.body["id"])) == 1


def make_endpoints(app_id: str, count: int, filters: list[str], *, active: bool = True) -> set[str]:
    """Endpoints written straight to the table (1,000 API calls would only test the API)."""
    now_ms = clock.to_ms(clock.now())
    created = set()
    with EndpointModel.batch_write() as batch:
        for _ in range(count):
            ep = EndpointModel(
                app_id=app_id,
                endpoint_id=ids.new_id("ep", now_ms),
                url="http://127.0.0.1:9/bulk",
                filter_events=filters,
                active=active,
                created_at=now_ms,
                updated_at=now_ms,
            )
            batch.save(ep)
            created.add(ep.endpoint_id)
    return created


def drop_deliveries() -> int:
    """Discard the DeliveryQueue's messages (these runs are checked in DynamoDB, not delivered);
    moto's SQS gets slower with every message a queue holds."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    q = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].queues[queue("DeliveryQueue").name]
    n = len(q._messages) + len(q._pending_messages)
    q._messages.clear()
    q._pending_messages.clear()
    return n


def fan_out_step(pump: Pump) -> int:
    """One fan-out invocation (one page); returns the delivery messages it sent."""
    assert pump.once("FanoutQueue", "fanout", batch=1) == 1
    return drop_deliveries()


def receive_fanout(pump: Pump) -> dict[str, Any]:
    [message] = pump.sqs.receive_message(
        QueueUrl=queue("FanoutQueue").url, MaxNumberOfMessages=1, AttributeNames=["All"]
    )["Messages"]
    return dict(message)


def redeliver_now(pump: Pump, message: dict[str, Any]) -> None:
    """The message of a worker that died becomes visible again (its visibility timeout ran out)."""
    pump.sqs.change_message_visibility(
        QueueUrl=queue("FanoutQueue").url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )


def event_runs(app_id: str, event_id: str) -> list[TaskRunModel]:
    """Every run of the App created for the Event, whatever its id."""
    return [r for r in app_runs(app_id) if r.source_id == event_id]


def crash_step(
    pump: Pump, monkeypatch: pytest.MonkeyPatch, target: Any, name: str, survive_calls: int
) -> int:
    """Run one fan-out invocation whose worker dies at the (survive_calls+1)-th call of
    target.name; its message is then handed out again. Returns the delivery messages sent."""
    original = getattr(target, name)
    calls = {"n": 0}

    def dying(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > survive_calls:
            raise RuntimeError("killed")
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, dying)
    message = receive_fanout(pump)
    with pytest.raises(BatchFailed):  # the invocation fails (BatchSize 1)
        invoke("fanout", sqs_event([message], queue("FanoutQueue").arn))
    monkeypatch.setattr(target, name, original)
    redeliver_now(pump, message)
    return drop_deliveries()


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["none", "duplicate", "crashes"])
def test_one_event_to_1000_endpoints_makes_exactly_1000_runs(
    fault: str, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id, key = new_app(f"bulk-{fault}")
    matching = make_endpoints(app_id, 1000, ["invoice.*"])
    make_endpoints(app_id, 30, ["user.*"])
    make_endpoints(app_id, 20, ["*"], active=False)
    other_app, _ = new_app("bystander")
    make_endpoints(other_app, 5, ["*"])
    event = published(key, "invoice.paid", {"total": 1})
    sent = 0

    if fault == "duplicate":  # SQS hands out the same message twice
        message = receive_fanout(pump)
        redeliver_now(pump, message)
        pump.sqs.send_message(QueueUrl=queue("FanoutQueue").url, MessageBody=message["Body"])
    elif fault == "crashes":
        # page 1 done and its continuation sent, then the worker died before SQS heard of it
        message = receive_fanout(pump)
        assert invoke("fanout", sqs_event([message], queue("FanoutQueue").arn)) == {"batchItemFailures": []}
        sent += drop_deliveries()
        redeliver_now(pump, message)
        assert fan_out_step(pump) == 0  # the redelivered page 1 is known to be done: nothing resent
        sent += fan_out_step(pump)  # page 2
        # page 3's worker dies after creating 50 of its 100 runs
        sent += crash_step(pump, monkeypatch, run_data, "put_new", survive_calls=50)
        sent += fan_out_step(pump)  # page 3 again
        sent += fan_out_step(pump)  # page 4
        # page 5's worker dies recording the page: it sent nothing onwards
        sent += crash_step(pump, monkeypatch, event_data, "record_page", survive_calls=0)
        assert pump.depth("FanoutQueue") == 1  # page 5 again, nothing else
        sent += fan_out_step(pump)  # page 5
        # page 6's worker dies after sending page 7's message, before marking page 6 continued
        sent += crash_step(pump, monkeypatch, fanout.fanout_pages, "mark_continued", survive_calls=0)
        assert pump.depth("FanoutQueue") == 2  # page 6 again, and page 7: the one repeat there is
        # page 6 again re-sends page 7's message (the one repeat); page 7's record absorbs it
        sent += fan_out_step(pump) + fan_out_step(pump) + fan_out_step(pump)
        assert pump.depth("FanoutQueue") == 1  # page 8, once

    pages = 0
    while pump.depth("FanoutQueue"):
        sent += fan_out_step(pump)
        pages += 1

    runs = event_runs(app_id, event["id"])
    assert len(runs) == 1000, len(runs)
    assert {r.endpoint_id for r in runs} == matching
    assert all(r.run_id == event_service.run_id_for(event["id"], r.endpoint_id) for r in runs)
    assert all(r.source == "event" and r.status == "pending" for r in runs)
    assert app_runs(other_app) == []
    assert sent >= 1000  # every run was enqueued at least once (the worker's claim absorbs repeats)

    stored = event_data.get(app_id, event["id"], consistent=True)
    assert stored is not None and stored.fanout_status == "done"
    assert int(stored.matched_count) == 1000 and int(stored.page_count) == 11
    recorded = [ep for _, page in event_data.matched_pages(stored) for ep in page]
    assert len(recorded) == 1000 and set(recorded) == matching
    assert stored.endpoint_ids is None  # the Event item does not grow with its Endpoints
    assert usage(key)["event"] == 1
    if fault in ("none", "duplicate"):
        assert sent == 1000  # the duplicate of page 1 came after it was recorded: nothing resent
        assert pages == (11 if fault == "none" else 12)  # 1,050 endpoints in pages of 100
    if fault == "none":
        detail = call_api("GET", f"/v1/events/{event['id']}", key=key).body
        assert detail["matched_endpoints"] == 1000 and len(detail["deliveries"]) == 100
        assert detail["fanout_status"] == "done" and detail["deliveries_next_cursor"]
    drain_queues()


# Index lag off: the run list reads the `by_app` index, which shows a run created a moment ago
# only once the index caught up (as in DynamoDB); this test lists right after creating.
@pytest.mark.index_lag(0)
def test_monthly_quota_set_by_the_admin_blocks_publish_and_direct_runs(
    receiver: Receiver, pump: Pump
) -> None:
    app_id, key = new_app("quota")
    ep = endpoint(key, receiver.url("/q"), ["*"])
    path = f"/v1/apps/{app_id}/quota"
    assert call_api("PUT", path, key=key, body={"monthly_quota": 2}).status == 401  # an App key is not enough
    for bad in ({"monthly_quota": 0}, {"monthly_quota": "two"}, {}, {"monthly_quota": 2, "x": 1}):
        assert call_api("PUT", path, key=ADMIN_KEY, body=bad).status == 400, bad
    assert call_api("PUT", "/v1/apps/app_NOPE/quota", key=ADMIN_KEY, body={"monthly_quota": 2}).status == 404
    set_to = call_api("PUT", path, key=ADMIN_KEY, body={"monthly_quota": 2})
    assert set_to.status == 200 and set_to.body["monthly_quota"] == 2 and set_to.body["id"] == app_id

    published(key, "a.b")
    run = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep["id"]})
    assert run.status == 201
    pump.deliveries()  # a direct run sent at once is counted by the worker that claims it
    over = publish(key, "a.b", headers={"Idempotency-Key": "k"})
    assert over.status == 429 and over.body["error"]["code"] == "QUOTA_EXCEEDED"
    direct = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep["id"]})
    assert direct.status == 429 and direct.body["error"]["code"] == "QUOTA_EXCEEDED"
    assert len(events_of(key)) == 1
    assert len(call_api("GET", "/v1/task-runs", key=key, query={"source": "direct"}).body["data"]) == 1
    assert pump.depth("FanoutQueue") == 1
    assert usage(key) | {"month": None} == {
        "month": None,
        "schedule": 0,
        "event": 1,
        "direct": 1,
        "total": 2,
        "monthly_quota": 2,
    }

    cleared = call_api("PUT", path, key=ADMIN_KEY, body={"monthly_quota": None})
    assert cleared.status == 200 and cleared.body["monthly_quota"] is None
    assert publish(key, "a.b", headers={"Idempotency-Key": "k"}).status == 202  # a 429 did not burn the key
    raised = call_api("PUT", path, key=ADMIN_KEY, body={"monthly_quota": 4})
    assert raised.body["monthly_quota"] == 4
    assert call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep["id"]}).status == 201
    pump.deliveries()
    assert publish(key, "a.b").status == 429
    assert usage(key)["total"] == 4


def test_bad_events_get_400_or_413_and_store_nothing(pump: Pump) -> None:
    _, key = new_app("validation")
    cases: list[tuple[Any, int, str]] = [
        ({"name": ""}, 400, "name"),
        ({"name": "invoice."}, 400, "name"),
        ({"name": ".paid"}, 400, "name"),
        ({"name": "invoice..paid"}, 400, "name"),
        ({"name": "invoice.*"}, 400, "name"),
        ({"name": "*"}, 400, "name"),
        ({"name": "invoice paid"}, 400, "name"),
        ({"name": "x" * 129}, 400, "name"),
        ({"name": 42}, 400, "name"),
        ({"payload": {}}, 400, "name"),
        ({"name": "a.b", "extra": 1}, 400, "extra"),
        ({"name": "a.b", "payload": "x" * 300_000}, 413, "payload"),
    ]
    for body, status, field in cases:
        resp = call_api("POST", "/v1/events", key=key, body=body)
        assert resp.status == status, (body, resp.body)
        assert resp.body["error"]["field"] == field, (body, resp.body)
    assert call_api("POST", "/v1/events", key=key, raw_body="{nope").status == 400
    assert call_api("POST", "/v1/events", body={"name": "a.b"}).status == 401
    assert events_of(key) == []
    assert usage(key)["total"] == 0 and pump.depth("FanoutQueue") == 0
    assert published(key, "x" * 128)["name"] == "x" * 128


def test_another_app_cannot_see_events_and_never_receives_them(receiver: Receiver, pump: Pump) -> None:
    app_a, key_a = new_app("a")
    app_b, key_b = new_app("b")
    endpoint(key_a, receiver.url("/a"), ["*"])
    endpoint(key_b, receiver.url("/b"), ["*"])
    event = published(key_a, "invoice.paid", {"secret": "a"})
    published(key_a, "invoice.paid")
    fan_out_all(pump)
    pump.deliveries()
    assert len(receiver.received("/a")) == 2 and receiver.received("/b") == []
    assert call_api("GET", f"/v1/events/{event['id']}", key=key_b).status == 404
    assert events_of(key_b) == []
    assert usage(key_b)["total"] == 0
    cursor = call_api("GET", "/v1/events", key=key_a, query={"limit": "1"}).body["next_cursor"]
    assert cursor
    resp = call_api("GET", "/v1/events", key=key_b, query={"limit": "1", "cursor": cursor})
    assert resp.status == 400 and resp.body["error"]["field"] == "cursor"
    # a fan-out message naming B's App with A's event finds no such event in B
    forged = {
        "MessageId": "f",
        "ReceiptHandle": "f",
        "Body": json.dumps({"event_id": event["id"], "app_id": app_b, "cursor": None}),
        "Attributes": {},
    }
    assert invoke("fanout", sqs_event([forged], queue("FanoutQueue").arn)) == {"batchItemFailures": []}
    assert len(event_runs(app_a, event["id"])) == 1 and app_runs(app_b) == []


def test_event_detail_pages_its_deliveries(receiver: Receiver, pump: Pump) -> None:
    _, key = new_app("paging")
    eps = [endpoint(key, receiver.url(f"/p{i}"), ["*"])["id"] for i in range(3)]
    event = published(key, "a.b")
    fan_out_all(pump)
    first = call_api("GET", f"/v1/events/{event['id']}", key=key, query={"limit": "2"}).body
    assert len(first["deliveries"]) == 2 and first["deliveries_next_cursor"]
    rest = call_api(
        "GET", f"/v1/events/{event['id']}", key=key, query={"cursor": first["deliveries_next_cursor"]}
    ).body
    assert rest["deliveries_next_cursor"] is None
    assert sorted(d["endpoint_id"] for d in first["deliveries"] + rest["deliveries"]) == sorted(eps)
    assert all(d["status"] == "pending" for d in rest["deliveries"])
    other = call_api("GET", f"/v1/events/{event['id']}", key=key, query={"cursor": "garbage!"})
    assert other.status == 400
    drain_queues()


def test_fan_out_messages_malformed_or_for_a_missing_event(pump: Pump) -> None:
    msgs = [
        {"MessageId": "bad", "ReceiptHandle": "b", "Body": "{", "Attributes": {}},
        {"MessageId": "shape", "ReceiptHandle": "s", "Body": '{"event_id": 1}', "Attributes": {}},
        {
            "MessageId": "gone",
            "ReceiptHandle": "g",
            "Body": json.dumps({"event_id": "evt_NOPE", "app_id": "app_NOPE", "cursor": None}),
            "Attributes": {},
        },
    ]
    result = invoke("fanout", sqs_event(msgs, queue("FanoutQueue").arn))
    assert result == {"batchItemFailures": [{"itemIdentifier": "bad"}, {"itemIdentifier": "shape"}]}
    parsed = FANOUT_BODY.validate_json('{"event_id": "evt_e", "app_id": "app_a"}')
    assert isinstance(parsed, EventPage) and parsed.cursor is None and parsed.page == 0
    with pytest.raises(ValueError):
        FANOUT_BODY.validate_json('{"event_id": "evt_e", "app_id": "app_a", "cursor": 5}')


def test_a_publish_whose_fan_out_message_cannot_be_sent_is_kept_and_billed_once(
    pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, key = new_app("undo")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("SQS is down")

    monkeypatch.setattr(event_service, "send_fanout", broken)
    resp = publish(key, "a.b", headers={"Idempotency-Key": "retry-me"})
    assert resp.status == 202  # stored and billed: the scan sends its fan-out (test_ambiguous_creates)
    assert [event["id"] for event in events_of(key)] == [resp.body["id"]] and usage(key)["event"] == 1
    assert pump.depth("FanoutQueue") == 0
    monkeypatch.undo()
    again = publish(key, "a.b", headers={"Idempotency-Key": "retry-me"})
    assert again.status == 202 and again.headers.get("idempotent-replayed") == "true"
    assert again.body["id"] == resp.body["id"]
    assert len(events_of(key)) == 1 and usage(key)["event"] == 1


def test_a_stored_event_without_endpoints_is_done_after_one_page(pump: Pump) -> None:
    app_id, key = new_app("empty")
    event = published(key, "nobody.listens")
    assert fan_out_all(pump) == 1
    stored = EventModel.get(app_id, event["id"])
    assert stored.fanout_status == "done" and int(stored.matched_count) == 0 and stored.endpoint_ids is None
    assert call_api("GET", f"/v1/events/{event['id']}", key=key).body["deliveries"] == []


def test_the_openapi_document_describes_the_event_and_quota_routes() -> None:
    paths = call_api("GET", "/openapi.json").body["paths"]
    assert {"post", "get"} <= set(paths["/v1/events"])
    assert "get" in paths["/v1/events/{event_id}"]
    assert "put" in paths["/v1/apps/{app_id}/quota"]
    assert "202" in paths["/v1/events"]["post"]["responses"]
    assert "429" in paths["/v1/events"]["post"]["responses"]


@contextmanager
def event_writes_rejected(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """DynamoDB refuses every write that touches the Events table, with the error it gives an item
    past 400 KB; the Event's own reads still work."""
    import botocore.client
    from botocore.exceptions import ClientError

    table = os.environ["EVENTS_TABLE"]
    original = botocore.client.BaseClient._make_api_call

    def touches_events(operation: str, params: Any) -> bool:
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            return bool(params.get("TableName") == table)
        if operation == "TransactWriteItems":
            return any(
                part.get("TableName") == table
                for item in params.get("TransactItems", [])
                for part in item.values()
            )
        if operation == "BatchWriteItem":
            return table in params.get("RequestItems", {})
        return False

    def rejecting(self: Any, operation: str, params: Any) -> Any:
        if touches_events(operation, params):
            error = {
                "Code": "ValidationException",
                "Message": "Item size has exceeded the maximum allowed size",
            }
            raise ClientError({"Error": error}, operation)
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", rejecting)
    yield
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", original)


def fanout_bodies(pump: Pump) -> list[dict[str, Any]]:
    """The bodies of every fan-out message waiting in the queue (handed out and made visible again)."""
    bodies = []
    while True:
        got = pump.sqs.receive_message(QueueUrl=queue("FanoutQueue").url, MaxNumberOfMessages=10)
        messages = got.get("Messages", [])
        if not messages:
            break
        bodies += [json.loads(m["Body"]) for m in messages]
        for m in messages:
            pump.sqs.delete_message(QueueUrl=queue("FanoutQueue").url, ReceiptHandle=m["ReceiptHandle"])
    for body in bodies:
        pump.sqs.send_message(QueueUrl=queue("FanoutQueue").url, MessageBody=json.dumps(body))
    return bodies


def test_a_page_that_cannot_be_recorded_sends_no_continuation_and_parks_the_event_failed(
    pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id, key = new_app("record-refused")
    matching = make_endpoints(app_id, 250, ["invoice.*"])
    event = published(key, "invoice.paid", {"total": 1})
    with event_writes_rejected(monkeypatch):
        for _ in range(5):  # the queue hands the first page out maxReceiveCount times
            message = receive_fanout(pump)
            with pytest.raises(BatchFailed):
                invoke("fanout", sqs_event([message], queue("FanoutQueue").arn))
            redeliver_now(pump, message)
            drop_deliveries()
        continuations = [b for b in fanout_bodies(pump) if b.get("cursor") is not None]
        assert continuations == []  # a page that was not recorded sends nothing onwards
        assert pump.once("FanoutQueue", "fanout", batch=1) == 0  # the sixth receive moves it to the DLQ
    assert pump.once("FanoutDLQ", "fanout_dlq") == 1
    assert pump.depth("FanoutDLQ") == 0
    failed = call_api("GET", f"/v1/events/{event['id']}", key=key).body
    assert failed["fanout_status"] == "failed"
    assert "5 times" in failed["fanout_error"]

    _, other_key = new_app("record-refused-other")
    assert call_api("POST", f"/v1/events/{event['id']}/redrive", key=other_key).status == 404
    redriven = call_api("POST", f"/v1/events/{event['id']}/redrive", key=key)
    assert redriven.status == 202, redriven.body
    assert redriven.body["fanout_status"] == "running" and redriven.body["fanout_error"] is None
    again = call_api("POST", f"/v1/events/{event['id']}/redrive", key=key)
    assert again.status == 409 and again.body["error"]["code"] == "NOT_REDRIVABLE"
    assert fan_out_all(pump) == 3  # pages of 100: the first page again, then the rest, once each
    runs = event_runs(app_id, event["id"])
    assert {r.endpoint_id for r in runs} == matching and len(runs) == 250
    done = call_api("GET", f"/v1/events/{event['id']}", key=key, query={"limit": "100"}).body
    assert done["fanout_status"] == "done" and done["matched_endpoints"] == 250
    listed = list(done["deliveries"])
    cursor = done["deliveries_next_cursor"]
    while cursor:
        page = call_api("GET", f"/v1/events/{event['id']}", key=key, query={"cursor": cursor}).body
        listed += page["deliveries"]
        cursor = page["deliveries_next_cursor"]
    assert sorted(d["endpoint_id"] for d in listed) == sorted(matching)
    assert call_api("POST", f"/v1/events/{event['id']}/redrive", key=key).status == 409
    drain_queues()
