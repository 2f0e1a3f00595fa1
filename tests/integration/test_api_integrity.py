"""What the API accepts and keeps: headers that can be sent, delays that outlive nothing, no secret
outside the one response that shows it, no lost concurrent update, no stuck Idempotency-Key, and
bounded, strictly typed bodies."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import endpoints as endpoint_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.models import IdempotencyModel, TaskRunModel
from edgecron.domain.vocabulary import RunStatus
from edgecron.services import endpoints as endpoint_service
from edgecron.services import retry_policies as policy_service
from edgecron_testing.aws_fidelity import IndexTime
from edgecron_testing.harness import call_api, load_function, timeout_sec
from edgecron_testing.inprocess import app_of_run
from tests.integration.conftest import app_runs, new_app

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
EP = {"url": "http://127.0.0.1:9/hook"}
DAY = 86_400


@pytest.fixture
def fixed() -> clock.FixedClock:
    c = clock.FixedClock(T0)
    clock.set_clock(c)
    return c


def endpoint(key: str, **extra: Any) -> dict[str, Any]:
    resp = call_api("POST", "/v1/endpoints", key=key, body={**EP, **extra})
    assert resp.status == 201, resp.body
    return dict(resp.body)


def retention_s() -> int:
    return get_settings().history_ttl_days * DAY


def stored_run(run_id: str) -> TaskRunModel:
    run = run_data.get(app_of_run(run_id), run_id, consistent=True)
    assert run is not None
    return run


# --- headers: only what can go on the wire -------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "field"),
    [
        ({"X-Team": "日本"}, "headers.X-Team"),
        ({"X-Team": " lead"}, "headers.X-Team"),
        ({"X-Team": "lead\t"}, "headers.X-Team"),
        ({"X-Team": "a\x00b"}, "headers.X-Team"),
        ({"X-Team": "a\r\nX-Evil: 1"}, "headers.X-Team"),
        ({"X-Team": "caf\u00e9"}, "headers.X-Team"),
        ({"X Team": "a"}, "headers.X Team"),
        ({"X-Tëam": "a"}, "headers.X-Tëam"),
        ({"": "a"}, "headers."),
        ({"Webhook-Signature": "v1,forged"}, "headers.Webhook-Signature"),
        ({"transfer-encoding": "chunked"}, "headers.transfer-encoding"),
    ],
)
def test_headers_that_cannot_be_sent_are_refused_at_create_and_update(
    app_key: str, headers: dict[str, str], field: str
) -> None:
    created = call_api("POST", "/v1/endpoints", key=app_key, body={**EP, "headers": headers})
    assert created.status == 400, created.body
    assert created.body["error"]["code"] == "PARAM_INVALID"
    assert created.body["error"]["field"] == field
    assert call_api("GET", "/v1/endpoints", key=app_key).body["data"] == []

    ep = endpoint(app_key, headers={"X-Team": "a"})
    patched = call_api("PATCH", f"/v1/endpoints/{ep['id']}", key=app_key, body={"headers": headers})
    assert patched.status == 400 and patched.body["error"]["field"] == field, patched.body
    assert call_api("GET", f"/v1/endpoints/{ep['id']}", key=app_key).body["headers"] == {"X-Team": "a"}


def test_headers_with_inner_spaces_and_any_token_name_are_kept(app_key: str) -> None:
    headers = {"X-Team": "a b\tc", "x~odd!name": "v", "X-Empty": ""}
    assert endpoint(app_key, headers=headers)["headers"] == headers


# --- long delays: a run lives until it is due, plus the retention --------------------------------


def test_a_delayed_run_is_kept_until_it_is_due_plus_the_retention(
    app_key: str, fixed: clock.FixedClock
) -> None:
    ep = endpoint(app_key)
    created = call_api(
        "POST", "/v1/task-runs", key=app_key, body={"endpoint_id": ep["id"], "delay_sec": 200 * DAY}
    )
    assert created.status == 201, created.body
    run = stored_run(created.body["id"])
    due_s = int(run.deliver_at) // 1000
    assert run.expires_at == due_s + retention_s()
    fixed.advance(150 * DAY)  # past created + retention, long before it is due
    got = call_api("GET", f"/v1/task-runs/{created.body['id']}", key=app_key)
    assert got.status == 200 and got.body["status"] == "pending"


def test_every_write_that_moves_a_run_moves_its_expiry(app_key: str, fixed: clock.FixedClock) -> None:
    ep = endpoint(app_key)
    body = {"endpoint_id": ep["id"], "delay_sec": 10 * DAY}
    run_id = call_api("POST", "/v1/task-runs", key=app_key, body=body).body["id"]

    def expiry_after(now: datetime) -> int:
        return clock.to_ms(now) // 1000 + retention_s()

    now = fixed.advance(10 * DAY)
    claimed = run_data.claim(app_of_run(run_id), run_id, clock.to_ms(now))
    assert claimed is not None and claimed.expires_at == expiry_after(now)

    now = fixed.advance(5)
    due = now + timedelta(hours=6)
    assert run_data.schedule_retry(
        claimed,
        clock.to_ms(due),
        clock.to_ms(due),
        clock.to_ms(now),
        status_code=500,
        error="x",
        error_kind=None,
    )
    assert stored_run(run_id).expires_at == expiry_after(due)

    fixed.set(due)
    now = due
    claimed = run_data.claim(app_of_run(run_id), run_id, clock.to_ms(now))
    assert claimed is not None
    now = fixed.advance(1)
    assert run_data.finish(claimed, RunStatus.DEAD_LETTER, clock.to_ms(now), status_code=500)
    assert stored_run(run_id).expires_at == expiry_after(now)

    now = fixed.advance(30 * DAY)
    replayed = call_api("POST", f"/v1/dead-letters/{run_id}/replay", key=app_key)
    assert replayed.status == 200 and stored_run(run_id).expires_at == expiry_after(now)

    other = call_api("POST", "/v1/task-runs", key=app_key, body=body).body["id"]
    now = fixed.advance(DAY)
    assert call_api("POST", f"/v1/task-runs/{other}/cancel", key=app_key).status == 200
    assert stored_run(other).expires_at == expiry_after(now)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"delay_sec": 365 * DAY + 1}, "delay_sec"),
        ({"deliver_at": "2027-06-02T12:00:01Z"}, "deliver_at"),
        ({"deliver_at": "9999-12-31T23:59:59Z"}, "deliver_at"),
    ],
)
def test_delays_beyond_365_days_are_refused(
    app_key: str, fixed: clock.FixedClock, body: dict[str, Any], field: str
) -> None:
    ep = endpoint(app_key)
    resp = call_api("POST", "/v1/task-runs", key=app_key, body={"endpoint_id": ep["id"], **body})
    assert resp.status == 400, resp.body
    assert resp.body["error"]["field"] == field
    assert app_runs(resp_app_id(app_key)) == []


def test_a_delay_of_exactly_365_days_is_accepted(app_key: str, fixed: clock.FixedClock) -> None:
    ep = endpoint(app_key)
    for body in ({"delay_sec": 365 * DAY}, {"deliver_at": "2027-06-01T12:00:00Z"}):
        resp = call_api("POST", "/v1/task-runs", key=app_key, body={"endpoint_id": ep["id"], **body})
        assert resp.status == 201, resp.body


def resp_app_id(key: str) -> str:
    from edgecron.data import apps

    app_id = apps.app_for_key(key)
    assert app_id is not None
    return app_id


# --- secrets: in plaintext only in the one response that shows them ------------------------------


class RecordingSubsegment:
    def __init__(self, sink: list[Any]) -> None:
        self.sink = sink

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        self.sink.append((key, value))

    def put_annotation(self, key: str, value: Any) -> None:
        self.sink.append((key, value))

    def add_exception(self, exception: BaseException, stack: Any, remote: bool = False) -> None:
        self.sink.append(("exception", str(exception)))


class RecordingProvider:
    """A Powertools tracing provider that keeps what a handler puts into its trace segments."""

    def __init__(self) -> None:
        self.recorded: list[Any] = []

    @contextmanager
    def in_subsegment(self, name: str, **kwargs: Any) -> Iterator[RecordingSubsegment]:
        yield RecordingSubsegment(self.recorded)

    def put_annotation(self, key: str, value: Any) -> None:
        self.recorded.append((key, value))

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        self.recorded.append((key, value))


def test_traces_never_hold_api_keys_or_signing_secrets(
    monkeypatch: pytest.MonkeyPatch, admin_key: str
) -> None:
    """The API handler as a deployed function traces it (here the tests' tracing is off, so a Tracer
    recording into `provider` is built, and the handler module loaded anew with it)."""
    from aws_lambda_powertools import Tracer

    from edgecron import observability

    provider = RecordingProvider()
    monkeypatch.setattr(observability, "tracer", Tracer(service="edgecron", provider=provider))  # type: ignore[arg-type]
    load_function("api")  # the handler module as the other tests use it: put back after this one
    monkeypatch.delitem(sys.modules, "edgecron_fn_api")
    assert load_function("api").tracer is observability.tracer
    app = call_api("POST", "/v1/apps", body={"name": "traced"}, key=admin_key)
    assert app.status == 201
    key = app.body["api_key"]
    ep = endpoint(key)
    rotated = call_api("POST", f"/v1/endpoints/{ep['id']}/rotate-secret", key=key)
    assert rotated.status == 200
    assert provider.recorded, "the API handler is traced"
    traced = json.dumps(provider.recorded, default=str)
    for secret in (key, ep["secret"], rotated.body["secret"]):
        assert secret not in traced
    assert "whsec_" not in traced and "ek_" not in traced


def idempotency_items() -> str:
    return json.dumps([item.attribute_values for item in IdempotencyModel.scan()], default=str)


def test_the_idempotency_table_never_holds_a_signing_secret(app_key: str) -> None:
    headers = {"Idempotency-Key": "secret-free"}
    first = call_api("POST", "/v1/endpoints", key=app_key, body=EP, headers=headers)
    assert first.status == 201 and first.body["secret"].startswith("whsec_")
    stored = idempotency_items()
    assert first.body["id"] in stored
    assert first.body["secret"] not in stored and "whsec_" not in stored

    again = call_api("POST", "/v1/endpoints", key=app_key, body=EP, headers=headers)
    assert again.status == 201 and again.headers.get("idempotent-replayed") == "true"
    assert "secret" not in again.body
    assert again.body == {k: v for k, v in first.body.items() if k != "secret"}


# --- concurrent updates of one item never lose each other's change -------------------------------


@contextmanager
def before_first(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, other_update: Callable[[], object]
) -> Iterator[None]:
    """Run `other_update` right before the first call of `module.name` (a save that follows a read),
    then the real save: the interleaving read → other update → save, without timing."""
    real = getattr(module, name)
    done: list[bool] = []

    def save_after_the_other_update(*args: Any, **kwargs: Any) -> Any:
        if not done:
            done.append(True)
            other_update()
        return real(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(module, name, save_after_the_other_update)
        yield


def test_a_patch_racing_a_secret_rotation_keeps_both_changes(
    app_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id = resp_app_id(app_key)
    ep = endpoint(app_key)
    rotated: list[str] = []

    def rotate() -> None:
        rotated.append(endpoint_service.rotate_secret(app_id, ep["id"], clock.to_ms(clock.now()))[1])

    with before_first(monkeypatch, endpoint_data, "save", rotate):
        patched = call_api("PATCH", f"/v1/endpoints/{ep['id']}", key=app_key, body={"description": "d"})
    assert patched.status == 200, patched.body
    stored = endpoint_data.get(app_id, ep["id"])
    assert stored is not None and stored.description == "d"
    secrets = endpoint_service.active_secrets(stored, clock.to_ms(clock.now()))
    assert secrets[0] == rotated[0] and ep["secret"] in secrets


def test_a_rotation_racing_a_patch_keeps_both_changes(app_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ep = endpoint(app_key)

    def patch_url() -> None:
        resp = call_api("PATCH", f"/v1/endpoints/{ep['id']}", key=app_key, body={"url": EP["url"] + "/v2"})
        assert resp.status == 200

    with before_first(monkeypatch, endpoint_data, "save", patch_url):
        rotated = call_api("POST", f"/v1/endpoints/{ep['id']}/rotate-secret", key=app_key)
    assert rotated.status == 200 and rotated.body["url"] == EP["url"] + "/v2"
    stored = endpoint_data.get(resp_app_id(app_key), ep["id"])
    assert stored is not None and stored.url == EP["url"] + "/v2"
    assert endpoint_service.active_secrets(stored, clock.to_ms(clock.now()))[0] == rotated.body["secret"]


def test_a_patch_that_always_loses_the_race_is_a_409_and_changes_nothing(
    app_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id = resp_app_id(app_key)
    ep = endpoint(app_key)
    real = endpoint_data.save
    rounds: list[int] = []

    def racing_save(item: Any, **options: Any) -> Any:
        if item.description == "d":  # the PATCH's save: a rotation lands right before it, every time
            rounds.append(1)
            endpoint_service.rotate_secret(app_id, ep["id"], clock.to_ms(clock.now()))
        return real(item, **options)

    with monkeypatch.context() as patch:
        patch.setattr(endpoint_data, "save", racing_save)
        patched = call_api("PATCH", f"/v1/endpoints/{ep['id']}", key=app_key, body={"description": "d"})
    assert patched.status == 409 and patched.body["error"]["code"] == "CONCURRENT_UPDATE", patched.body
    assert len(rounds) == 5
    stored = endpoint_data.get(app_id, ep["id"])
    assert stored is not None and stored.description is None


def test_a_stale_endpoint_save_changes_nothing(app_key: str) -> None:
    ep = endpoint(app_key)
    stale = endpoint_data.get(resp_app_id(app_key), ep["id"])
    assert stale is not None
    rotated = call_api("POST", f"/v1/endpoints/{ep['id']}/rotate-secret", key=app_key).body["secret"]
    assert not endpoint_data.save(dataclasses.replace(stale, description="stale"))
    fresh = endpoint_data.get(resp_app_id(app_key), ep["id"])
    assert fresh is not None and fresh.description is None
    assert endpoint_service.active_secrets(fresh, clock.to_ms(clock.now()))[0] == rotated


def test_concurrent_retry_policy_patches_keep_both_changes(
    app_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgecron.data import retry_policies as policy_data
    from edgecron.schemas.retry_policies import RetryPolicyUpdate

    app_id = resp_app_id(app_key)
    rp = call_api(
        "POST", "/v1/retry-policies", key=app_key, body={"base_delay_sec": 10, "max_delay_sec": 100}
    )
    assert rp.status == 201

    def other_patch() -> None:
        update = RetryPolicyUpdate(max_attempts=7)
        policy_service.update(app_id, rp.body["id"], update, clock.to_ms(clock.now()))

    with before_first(monkeypatch, policy_data, "save", other_patch):
        patched = call_api("PATCH", f"/v1/retry-policies/{rp.body['id']}", key=app_key, body={"jitter": True})
    assert patched.status == 200, patched.body
    got = call_api("GET", f"/v1/retry-policies/{rp.body['id']}", key=app_key).body
    assert got["jitter"] is True and got["max_attempts"] == 7


def test_a_schedule_patch_racing_a_failed_fire_keeps_the_failure_count(
    app_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id = resp_app_id(app_key)
    endpoint(app_key)
    created = call_api("POST", "/v1/schedules", key=app_key, body={"cron": "0 0 1 1 *"})
    assert created.status == 201, created.body
    sid = created.body["id"]

    def failed_fire() -> None:
        schedule_data.record_outcome(app_id, sid, True, 3, clock.to_ms(clock.now()))

    with before_first(monkeypatch, schedule_data, "save_if_version", failed_fire):
        patched = call_api("PATCH", f"/v1/schedules/{sid}", key=app_key, body={"name": "renamed"})
    assert patched.status == 200, patched.body
    got = call_api("GET", f"/v1/schedules/{sid}", key=app_key).body
    assert got["name"] == "renamed" and got["consecutive_failures"] == 1


# --- an Idempotency-Key is never stuck, and a retry never duplicates -----------------------------


class FunctionDied(BaseException):
    """Stands for the API function stopped mid-request (its timeout, a crash): nothing after runs."""


def die_at(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    def die(*args: Any, **kwargs: Any) -> None:
        raise FunctionDied

    monkeypatch.setattr(module, name, die)


def api_timeout_s() -> int:
    return timeout_sec("api")


@pytest.mark.parametrize(
    ("path", "body", "prefix"),
    [
        ("/v1/endpoints", EP, "ep_"),
        ("/v1/retry-policies", {"max_attempts": 4}, "rp_"),
        ("/v1/schedules", {"cron": "0 0 1 1 *"}, "sch_"),
        ("/v1/events", {"name": "invoice.paid"}, "evt_"),
        ("/v1/task-runs", None, "run_"),
    ],
)
def test_a_create_that_died_before_answering_is_answered_by_a_retry_after_the_timeout(
    app_key: str,
    fixed: clock.FixedClock,
    monkeypatch: pytest.MonkeyPatch,
    index_time: IndexTime,
    path: str,
    body: Any,
    prefix: str,
) -> None:
    from edgecron.api import idempotency

    ep = endpoint(app_key)
    body = body if body is not None else {"endpoint_id": ep["id"], "delay_sec": 3600}
    headers = {"Idempotency-Key": "died-after-create"}
    with monkeypatch.context() as patch:
        die_at(patch, idempotency.store, "complete")
        with pytest.raises(FunctionDied):
            call_api("POST", path, key=app_key, body=body, headers=headers)
    index_time.settle()  # lists read an index: let it show what the dead request wrote
    listed_before = call_api("GET", path, key=app_key).body["data"]

    busy = call_api("POST", path, key=app_key, body=body, headers=headers)
    assert busy.status == 409 and busy.body["error"]["code"] == "IDEMPOTENCY_IN_PROGRESS"

    fixed.advance(api_timeout_s() + 1)
    retried = call_api("POST", path, key=app_key, body=body, headers=headers)
    assert retried.status in (201, 202), retried.body
    assert retried.body["id"].startswith(prefix)
    listed = call_api("GET", path, key=app_key).body["data"]
    assert [item["id"] for item in listed] == [item["id"] for item in listed_before]
    assert retried.body["id"] in [item["id"] for item in listed]
    if prefix == "ep_":
        assert retried.body["secret"].startswith("whsec_")  # never shown before: the first answer

    replayed = call_api("POST", path, key=app_key, body=body, headers=headers)
    assert replayed.headers.get("idempotent-replayed") == "true"
    assert replayed.body["id"] == retried.body["id"]


def test_a_create_that_died_before_storing_anything_is_made_once_by_the_retry(
    app_key: str, fixed: clock.FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {"Idempotency-Key": "died-before-create"}
    with monkeypatch.context() as patch:
        die_at(patch, endpoint_data, "put_new")
        with pytest.raises(FunctionDied):
            call_api("POST", "/v1/endpoints", key=app_key, body=EP, headers=headers)
    assert call_api("GET", "/v1/endpoints", key=app_key).body["data"] == []
    fixed.advance(api_timeout_s() + 1)
    retried = call_api("POST", "/v1/endpoints", key=app_key, body=EP, headers=headers)
    assert retried.status == 201, retried.body
    assert [e["id"] for e in call_api("GET", "/v1/endpoints", key=app_key).body["data"]] == [
        retried.body["id"]
    ]


def test_a_key_in_progress_is_still_refused_within_the_timeout(
    app_key: str, fixed: clock.FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgecron.api import idempotency

    headers = {"Idempotency-Key": "busy"}
    with monkeypatch.context() as patch:
        die_at(patch, idempotency.store, "complete")
        with pytest.raises(FunctionDied):
            call_api("POST", "/v1/endpoints", key=app_key, body=EP, headers=headers)
    fixed.advance(api_timeout_s() - 1)
    busy = call_api("POST", "/v1/endpoints", key=app_key, body=EP, headers=headers)
    assert busy.status == 409 and busy.body["error"]["code"] == "IDEMPOTENCY_IN_PROGRESS"
    other = call_api("POST", "/v1/endpoints", key=app_key, body={"url": EP["url"] + "/x"}, headers=headers)
    assert other.status == 409 and other.body["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"


# --- bodies: bounded depth and size, strict types, real zones and crons --------------------------


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("path", ["/v1/task-runs", "/v1/events", "/v1/schedules"])
def test_a_deeply_nested_body_is_a_400_that_names_the_field(app_key: str, path: str) -> None:
    ep = endpoint(app_key)
    base = {
        "/v1/task-runs": {"endpoint_id": ep["id"]},
        "/v1/events": {"name": "invoice.paid"},
        "/v1/schedules": {"cron": "0 0 1 1 *"},
    }[path]
    for depth in (5_000, 64):
        raw = json.dumps(base)[:-1] + ', "payload": ' + "[" * depth + "1" + "]" * depth + "}"
        resp = call_api("POST", path, key=app_key, raw_body=raw)
        assert resp.status == 400, (depth, resp.body)
        assert resp.body["error"] == {
            "code": "PARAM_INVALID",
            "message": "JSON nested deeper than 64 levels",
            "field": "payload",
        }
    for raw in ("[" * 5_000 + "]" * 5_000, "[" * 5_000, '{"payload": ' + "{" * 5_000):
        resp = call_api("POST", path, key=app_key, raw_body=raw)
        assert resp.status == 400, resp.body
        assert resp.body["error"]["field"] == ("payload" if raw.startswith("{") else "body")
    brackets_in_text = {**base, "payload": {"note": "[" * 5_000 + "{" * 5_000}}
    ok = call_api("POST", path, key=app_key, body=brackets_in_text)
    assert ok.status in (201, 202), ok.body
    ok = call_api("POST", path, key=app_key, body={**base, "payload": nested(62)})
    assert ok.status in (201, 202), ok.body


def test_a_body_over_the_size_limit_is_413(app_key: str) -> None:
    body = {**EP, "description": "x" * (1024 * 1024)}
    resp = call_api("POST", "/v1/endpoints", key=app_key, body=body)
    assert resp.status == 413 and resp.body["error"]["field"] == "body", resp.body
    assert call_api("GET", "/v1/endpoints", key=app_key).body["data"] == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/retry-policies", {"max_attempts": True}, "max_attempts"),
        ("/v1/retry-policies", {"base_delay_sec": 10.0}, "base_delay_sec"),
        ("/v1/retry-policies", {"max_delay_sec": "60"}, "max_delay_sec"),
        ("/v1/retry-policies", {"jitter": "true"}, "jitter"),
        ("/v1/endpoints", {**EP, "timeout_ms": True}, "timeout_ms"),
        ("/v1/endpoints", {**EP, "timeout_ms": "1000"}, "timeout_ms"),
        ("/v1/endpoints", {**EP, "active": 1}, "active"),
        ("/v1/task-runs", {"endpoint_id": "ep_X", "delay_sec": False}, "delay_sec"),
        ("/v1/task-runs", {"endpoint_id": "ep_X", "delay_sec": 1.5}, "delay_sec"),
        ("/v1/dead-letters/replay", {"limit": True}, "limit"),
        ("/v1/schedules", {"cron": 5}, "cron"),
        ("/v1/schedules", {"cron": "0 0 1 1 *", "endpoint_ids": "ep_X"}, "endpoint_ids"),
    ],
)
def test_numbers_and_booleans_are_strict(app_key: str, path: str, body: dict[str, Any], field: str) -> None:
    resp = call_api("POST", path, key=app_key, body=body)
    assert resp.status == 400, resp.body
    assert resp.body["error"]["code"] == "PARAM_INVALID" and resp.body["error"]["field"] == field


def test_app_quotas_are_strict_integers(admin_key: str) -> None:
    resp = call_api("POST", "/v1/apps", key=admin_key, body={"name": "q", "monthly_quota": True})
    assert resp.status == 400 and resp.body["error"]["field"] == "monthly_quota"
    app_id, _ = new_app("q")
    resp = call_api("PUT", f"/v1/apps/{app_id}/quota", key=admin_key, body={"monthly_quota": 10.0})
    assert resp.status == 400 and resp.body["error"]["field"] == "monthly_quota"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "0 0 * * *", "timezone": "localtime"}, "timezone"),
        ({"cron": "0 0 * * *", "timezone": "Factory"}, "timezone"),
        ({"cron": "0 0 * * *", "timezone": "posixrules"}, "timezone"),
        ({"at": "2030-01-01T00:00:00Z", "timezone": "localtime"}, "timezone"),
        ({"cron": "*/1000 * * * * *"}, "cron"),
        ({"cron": "0-59/61 * * * *"}, "cron"),
    ],
)
def test_special_zones_and_impossible_steps_are_refused(
    app_key: str, body: dict[str, Any], field: str
) -> None:
    resp = call_api("POST", "/v1/schedules", key=app_key, body=body)
    assert resp.status == 400, resp.body
    assert resp.body["error"]["field"] == field
    assert call_api("GET", "/v1/schedules", key=app_key).body["data"] == []
    ok = call_api("POST", "/v1/schedules", key=app_key, body={"cron": "0 0 * * *"})
    assert ok.status == 201
    patched = call_api("PATCH", f"/v1/schedules/{ok.body['id']}", key=app_key, body=body)
    assert patched.status == 400 and patched.body["error"]["field"] == field, patched.body
