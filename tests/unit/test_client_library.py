"""The typed client library against a real HTTP server on 127.0.0.1: paging, retries on 429/5xx that
honour Retry-After within a bounded budget, and one Idempotency-Key per create, reused by its retries.

The client's waits go through an injected `sleep`, so no test waits for real time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import parse_qs

import pytest

from edgecron_client import ApiError, Backoff, EdgeCron, TransportError
from edgecron_client.transport import parse_retry_after
from edgecron_testing.receiver import Receiver, Reply

KEY = "ek_client_key"


def page(ids: list[str], cursor: str | None) -> Reply:
    body = {"data": [{"id": i, "status": "success"} for i in ids], "next_cursor": cursor}
    return Reply(200, json.dumps(body).encode(), {"content-type": "application/json"})


def error(status: int, code: str, field: str | None = None, headers: dict[str, str] | None = None) -> Reply:
    body = {"error": {"code": code, "message": f"{code.lower()} happened", "field": field}}
    return Reply(status, json.dumps(body).encode(), {"content-type": "application/json", **(headers or {})})


def created(run_id: str) -> Reply:
    return Reply(
        201, json.dumps({"id": run_id, "status": "pending"}).encode(), {"content-type": "application/json"}
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def waits() -> list[float]:
    return []


@pytest.fixture
def client(receiver: Receiver, waits: list[float]) -> EdgeCron:
    return EdgeCron(receiver.base_url, KEY, sleep=waits.append, timeout=5)


def queries(receiver: Receiver, path: str) -> list[dict[str, list[str]]]:
    return [parse_qs(r.query) for r in receiver.received(path)]


# -- paging ---------------------------------------------------------------------------------------------


def test_iter_yields_every_item_across_pages_passing_each_cursor(
    receiver: Receiver, client: EdgeCron
) -> None:
    receiver.script("/v1/task-runs", page(["run_1", "run_2"], "c1"), page(["run_3"], "c2"), page([], None))
    runs = [run["id"] for run in client.task_runs.iter(status="failed")]
    assert runs == ["run_1", "run_2", "run_3"]
    assert queries(receiver, "/v1/task-runs") == [
        {"status": ["failed"], "limit": ["100"]},
        {"status": ["failed"], "limit": ["100"], "cursor": ["c1"]},
        {"status": ["failed"], "limit": ["100"], "cursor": ["c2"]},
    ]


def test_iter_fetches_the_next_page_only_when_it_is_needed(receiver: Receiver, client: EdgeCron) -> None:
    receiver.script("/v1/endpoints", page(["ep_1", "ep_2"], "c1"), page(["ep_3"], None))
    first = next(client.endpoints.iter(limit=2))
    assert first["id"] == "ep_1"
    assert len(receiver.received("/v1/endpoints")) == 1


def test_a_repeated_cursor_ends_the_iteration(receiver: Receiver, client: EdgeCron) -> None:
    receiver.script("/v1/schedules", page(["sch_1"], "same"))
    assert [s["id"] for s in client.schedules.iter()] == ["sch_1", "sch_1"]
    assert len(receiver.received("/v1/schedules")) == 2


def test_list_is_one_page_and_drops_unset_filters(receiver: Receiver, client: EdgeCron) -> None:
    receiver.script("/v1/dead-letters", page(["run_9"], "next"))
    one = client.dead_letters.list(limit=5, endpoint_id="ep_1", since=None)
    assert one["next_cursor"] == "next"
    assert queries(receiver, "/v1/dead-letters") == [{"limit": ["5"], "endpoint_id": ["ep_1"]}]


def test_sub_resources_page_under_their_parent(receiver: Receiver, client: EdgeCron) -> None:
    receiver.script("/v1/schedules/sch_1/fires", page(["f1"], None))
    receiver.script("/v1/task-runs/run_1/attempts", page(["a1"], None))
    assert [f["id"] for f in client.schedules.fires.iter("sch_1")] == ["f1"]  # type: ignore[typeddict-item]
    assert [a["id"] for a in client.task_runs.attempts.iter("run_1")] == ["a1"]  # type: ignore[typeddict-item]
    assert queries(receiver, "/v1/schedules/sch_1/fires") == [{"limit": ["50"]}]


def json_reply(status: int, body: object) -> Reply:
    return Reply(status, json.dumps(body).encode(), {"content-type": "application/json"})


def test_apps_and_their_keys_page_create_rotate_and_revoke(receiver: Receiver, client: EdgeCron) -> None:
    key_id = "key_" + "c" * 64
    receiver.script("/v1/apps", page(["app_1"], "more"), page(["app_2"], None))
    receiver.script(
        "/v1/apps/app_1/keys", page([key_id], None), json_reply(201, {"key": {"id": "k2"}, "api_key": "ek_x"})
    )
    receiver.script(
        f"/v1/apps/app_1/keys/{key_id}/rotate",
        json_reply(201, {"key": {"id": "k3"}, "api_key": "ek_y", "previous": None}),
    )
    receiver.script(f"/v1/apps/app_1/keys/{key_id}", json_reply(200, {"id": key_id}))
    assert [a["id"] for a in client.apps.iter()] == ["app_1", "app_2"]
    assert queries(receiver, "/v1/apps") == [{"limit": ["100"]}, {"limit": ["100"], "cursor": ["more"]}]
    assert [k["id"] for k in client.apps.keys.iter("app_1")] == [key_id]
    assert client.apps.keys.create("app_1", name="ci")["api_key"] == "ek_x"
    assert client.apps.keys.rotate("app_1", key_id, grace_period_sec=0)["previous"] is None
    assert client.apps.keys.revoke("app_1", key_id)["id"] == key_id
    [_, create] = receiver.received("/v1/apps/app_1/keys")
    assert (create.method, json.loads(create.body)) == ("POST", {"name": "ci"})
    assert "idempotency-key" not in {
        h.lower() for h in create.headers
    }  # a create of a secret is never replayed
    [rotate] = receiver.received(f"/v1/apps/app_1/keys/{key_id}/rotate")
    assert json.loads(rotate.body) == {"grace_period_sec": 0}
    assert [r.method for r in receiver.received(f"/v1/apps/app_1/keys/{key_id}")] == ["DELETE"]


# -- retries --------------------------------------------------------------------------------------------


def test_429_is_retried_after_the_wait_retry_after_asks_for(
    receiver: Receiver, client: EdgeCron, waits: list[float]
) -> None:
    receiver.script(
        "/v1/task-runs/run_1",
        error(429, "RATE_LIMITED", headers={"Retry-After": "3"}),
        Reply(200, b'{"id": "run_1", "status": "success"}'),
    )
    assert client.task_runs.get("run_1")["status"] == "success"
    assert waits == [3.0]
    assert len(receiver.received("/v1/task-runs/run_1")) == 2


def test_5xx_backs_off_exponentially_then_gives_up_with_the_apis_error(
    receiver: Receiver, waits: list[float]
) -> None:
    receiver.script("/v1/usage", error(503, "UNAVAILABLE"))
    client = EdgeCron(
        receiver.base_url, KEY, sleep=waits.append, backoff=Backoff(attempts=4, base_delay_sec=1.0)
    )
    with pytest.raises(ApiError) as caught:
        client.usage()
    assert (caught.value.status, caught.value.code) == (503, "UNAVAILABLE")
    assert len(receiver.received("/v1/usage")) == 4
    assert len(waits) == 3
    assert [0.5 <= w <= 1.0 for w in waits[:1]] == [True]  # jittered 1 s, 2 s, 4 s
    assert 1.0 <= waits[1] <= 2.0 and 2.0 <= waits[2] <= 4.0


def test_a_retry_after_beyond_the_budget_is_not_waited_for(
    receiver: Receiver, client: EdgeCron, waits: list[float]
) -> None:
    receiver.script("/v1/events", error(429, "RATE_LIMITED", headers={"Retry-After": "3600"}))
    with pytest.raises(ApiError) as caught:
        client.events.list()
    assert caught.value.retry_after == 3600.0
    assert waits == []
    assert len(receiver.received("/v1/events")) == 1


def test_the_total_wait_is_bounded(receiver: Receiver, waits: list[float]) -> None:
    receiver.script("/v1/usage", error(429, "RATE_LIMITED", headers={"Retry-After": "4"}))
    backoff = Backoff(attempts=100, max_delay_sec=5, total_sec=10)
    with pytest.raises(ApiError):
        EdgeCron(receiver.base_url, KEY, sleep=waits.append, backoff=backoff).usage()
    assert waits == [4.0, 4.0]


def test_client_errors_are_not_retried_and_carry_code_and_field(
    receiver: Receiver, client: EdgeCron, waits: list[float]
) -> None:
    receiver.script("/v1/endpoints", error(400, "PARAM_INVALID", field="url"))
    with pytest.raises(ApiError) as caught:
        client.endpoints.create({"url": "ftp://nope"})
    assert (caught.value.status, caught.value.code, caught.value.field) == (400, "PARAM_INVALID", "url")
    assert str(caught.value) == "PARAM_INVALID: param_invalid happened (field: url)"
    assert waits == []


def test_a_post_without_an_idempotency_key_is_not_retried_on_5xx(
    receiver: Receiver, client: EdgeCron, waits: list[float]
) -> None:
    receiver.script("/v1/task-runs/run_1/cancel", error(500, "INTERNAL"))
    with pytest.raises(ApiError):
        client.task_runs.cancel("run_1")
    assert len(receiver.received("/v1/task-runs/run_1/cancel")) == 1


def test_an_unreadable_answer_is_a_transport_error(receiver: Receiver, client: EdgeCron) -> None:
    receiver.script("/v1/usage", Reply(200, b"<html>login</html>"))
    with pytest.raises(TransportError, match="not JSON"):
        client.usage()


# -- idempotency keys -----------------------------------------------------------------------------------


def test_a_create_sends_an_idempotency_key_and_its_retry_reuses_it(
    receiver: Receiver, client: EdgeCron, waits: list[float]
) -> None:
    receiver.script("/v1/task-runs", error(503, "UNAVAILABLE"), error(502, "BAD_GATEWAY"), created("run_7"))
    run = client.task_runs.create({"endpoint_id": "ep_1", "payload": {"n": 1}})
    assert run["id"] == "run_7"
    keys = [r.headers.get("idempotency-key") for r in receiver.received("/v1/task-runs")]
    assert len(keys) == 3
    assert keys[0] and len(set(keys)) == 1
    assert [json.loads(r.body) for r in receiver.received("/v1/task-runs")] == [
        {"endpoint_id": "ep_1", "payload": {"n": 1}}
    ] * 3


def test_each_create_gets_its_own_key_unless_the_caller_gives_one(
    receiver: Receiver, client: EdgeCron
) -> None:
    receiver.script("/v1/events", created("evt_1"))
    client.events.publish("order.created", {"n": 1})
    client.events.publish("order.created", {"n": 2})
    client.events.publish("order.created", {"n": 3}, idempotency_key="order-3")
    keys = [r.headers["idempotency-key"] for r in receiver.received("/v1/events")]
    assert keys[0] != keys[1]
    assert keys[2] == "order-3"


def test_requests_carry_the_bearer_key(receiver: Receiver, client: EdgeCron) -> None:
    receiver.script("/v1/usage", Reply(200, b'{"month": "2026-12", "total": 3}'))
    assert client.usage()["total"] == 3
    (seen,) = receiver.received("/v1/usage")
    assert seen.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("5", 5.0),
        ("0", 0.0),
        ("1.5", 1.5),
        ("soon", None),
        ("-3", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
    ],
)
def test_retry_after_is_parsed_totally(header: str, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds
