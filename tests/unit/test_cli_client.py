"""The CLI client and commands against a stub API server on 127.0.0.1 (real HTTP, no mocks).

Covers the exit codes scripts rely on, the error line on stderr, --json and --all, secrets shown only
when the API returns them at create/rotate, `runs watch` and the bulk replay loop.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from edgecron_cli.client import ApiError, Client, TransportError, exit_code
from edgecron_cli.main import app
from edgecron_client import NO_RETRY

KEY = "ek_stub_key_never_printed"
ADMIN = "admin_stub_key_never_printed"


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None
    raw: bytes | None = None
    delay_sec: float = 0.0


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class StubApi:
    """Scripted replies per (method, path), the last one repeating; every request recorded."""

    requests: list[Seen] = field(default_factory=list)
    script: dict[tuple[str, str], deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on(self, method: str, path: str, *replies: Reply) -> None:
        with self.lock:
            self.script[(method, path)] = deque(replies)

    def seen(self, method: str, path: str) -> list[Seen]:
        with self.lock:
            return [r for r in self.requests if (r.method, r.path) == (method, path)]

    def next_reply(self, method: str, path: str) -> Reply:
        with self.lock:
            queue = self.script.get((method, path))
            if not queue:
                return Reply(
                    404, {"error": {"code": "NOT_FOUND", "message": "no such route", "field": "path"}}
                )
            return queue.popleft() if len(queue) > 1 else queue[0]


@pytest.fixture
def stub() -> Iterator[tuple[StubApi, str]]:
    api = StubApi()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            with api.lock:
                api.requests.append(
                    Seen(
                        self.command,
                        parts.path,
                        {k: v[-1] for k, v in parse_qs(parts.query).items()},
                        {k.lower(): v for k, v in self.headers.items()},
                        json.loads(raw) if raw else None,
                    )
                )
            reply = api.next_reply(self.command, parts.path)
            if reply.delay_sec:
                time.sleep(reply.delay_sec)
            payload = (
                reply.raw
                if reply.raw is not None
                else b""
                if reply.body is None
                else json.dumps(reply.body).encode()
            )
            try:
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:  # the client gave up (the timeout test): nothing to answer
                pass

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield api, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def error(status: int, code: str, message: str, field_name: str | None = None) -> Reply:
    body: dict[str, Any] = {"code": code, "message": message}
    if field_name:
        body["field"] = field_name
    return Reply(status, {"error": body})


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# -- the client -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, 1), (401, 4), (403, 1), (404, 3), (409, 5), (413, 1), (422, 1), (429, 1), (500, 6), (503, 6)],
)
def test_error_statuses_map_to_documented_exit_codes(
    stub: tuple[StubApi, str], status: int, code: int
) -> None:
    api, url = stub
    api.on("GET", "/v1/endpoints/ep_1", error(status, "SOME_CODE", "went wrong", "id"))
    with pytest.raises(ApiError) as caught:
        Client(url, KEY, backoff=NO_RETRY).endpoints.get("ep_1")
    assert (caught.value.status, caught.value.code, caught.value.message, caught.value.field) == (
        status,
        "SOME_CODE",
        "went wrong",
        "id",
    )
    assert exit_code(caught.value) == code


def test_an_error_body_that_is_not_the_apis_still_gives_status_and_text(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on("GET", "/v1/usage", Reply(502, raw=b"<html>Bad   Gateway</html>"))
    with pytest.raises(ApiError) as caught:
        Client(url, KEY, backoff=NO_RETRY).usage()
    assert caught.value.code == "HTTP_502"
    assert caught.value.message == "<html>Bad Gateway</html>"
    assert exit_code(caught.value) == 6


def test_connection_refused_is_a_transport_error_with_exit_6() -> None:
    with pytest.raises(TransportError, match="connection refused") as caught:
        Client(f"http://127.0.0.1:{closed_port()}", KEY).endpoints.list()
    assert exit_code(caught.value) == 6
    assert KEY not in str(caught.value)


def test_a_slow_api_times_out(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on("GET", "/v1/usage", Reply(200, {"month": "2026-01"}, delay_sec=1.0))
    with pytest.raises(TransportError, match="timed out"):
        Client(url, KEY, timeout=0.2).usage()


def test_a_2xx_body_that_is_not_json_is_a_transport_error(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on("GET", "/v1/usage", Reply(200, raw=b"<html>proxy login</html>"))
    with pytest.raises(TransportError, match="not JSON"):
        Client(url, KEY).usage()


def test_requests_carry_the_key_and_the_idempotency_key(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on("POST", "/v1/events", Reply(202, {"id": "evt_1"}))
    Client(url, KEY).events.publish("invoice.paid", {"n": 1}, idempotency_key="k-1")
    (seen,) = api.seen("POST", "/v1/events")
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.headers["idempotency-key"] == "k-1"
    assert seen.body == {"name": "invoice.paid", "payload": {"n": 1}}


def test_redirects_are_not_followed(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on("GET", "/v1/notifications", Reply(301, raw=b""))
    with pytest.raises(TransportError, match="redirected") as caught:
        Client(url, KEY).notifications.list()
    assert exit_code(caught.value) == 6


def test_follow_merges_every_page_and_passes_the_cursor(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on(
        "GET",
        "/v1/endpoints",
        Reply(200, {"data": [{"id": "ep_1"}, {"id": "ep_2"}], "next_cursor": "c1"}),
        Reply(200, {"data": [{"id": "ep_3"}], "next_cursor": None}),
    )
    result = list(Client(url, KEY).endpoints.iter())
    assert result == [{"id": "ep_1"}, {"id": "ep_2"}, {"id": "ep_3"}]
    first, second = api.seen("GET", "/v1/endpoints")
    assert first.query == {"limit": "100"}
    assert second.query == {"limit": "100", "cursor": "c1"}


def test_follow_stops_if_the_api_repeats_a_cursor(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on("GET", "/v1/schedules", Reply(200, {"data": [{"id": "sch_1"}], "next_cursor": "same"}))
    assert len(list(Client(url, KEY).schedules.iter())) == 2
    assert len(api.seen("GET", "/v1/schedules")) == 2


def test_one_page_is_returned_as_the_api_sent_it(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    page = {"data": [{"id": "run_1"}], "next_cursor": "c1"}
    api.on("GET", "/v1/task-runs", Reply(200, page))
    assert Client(url, KEY).task_runs.list(status="failed", source=None, limit=5) == page
    (seen,) = api.seen("GET", "/v1/task-runs")
    assert seen.query == {"status": "failed", "limit": "5"}


def test_delete_answers_none_on_204(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on("DELETE", "/v1/endpoints/ep_1", Reply(204))
    assert Client(url, KEY).endpoints.delete("ep_1") is None


def test_set_quota_sends_null_for_unlimited(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on("PUT", "/v1/apps/app_1/quota", Reply(200, {"id": "app_1", "monthly_quota": None}))
    Client(url, ADMIN).apps.set_quota("app_1", None)
    (seen,) = api.seen("PUT", "/v1/apps/app_1/quota")
    assert seen.body == {"monthly_quota": None}


def test_set_rate_limit_sends_the_rate_or_null(stub: tuple[StubApi, str]) -> None:
    api, url = stub
    api.on(
        "PUT",
        "/v1/apps/app_1/rate-limit",
        Reply(200, {"app_id": "app_1", "requests_per_sec": 20}),
        Reply(200, {"app_id": "app_1", "requests_per_sec": None}),
    )
    apps = Client(url, ADMIN).apps
    assert apps.set_rate_limit("app_1", 20) == {"app_id": "app_1", "requests_per_sec": 20}
    apps.set_rate_limit("app_1", None)
    assert [seen.body for seen in api.seen("PUT", "/v1/apps/app_1/rate-limit")] == [
        {"requests_per_sec": 20},
        {"requests_per_sec": None},
    ]


# -- the commands ---------------------------------------------------------------------------------------


@pytest.fixture
def cli(stub: tuple[StubApi, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A runner configured by environment only, in a directory without local.json."""
    monkeypatch.chdir(tmp_path)
    _, url = stub
    return CliRunner(env={"EDGECRON_URL": url, "EDGECRON_API_KEY": KEY, "EDGECRON_ADMIN_KEY": ADMIN})


def run(cli: CliRunner, *args: str) -> Any:
    return cli.invoke(app, list(args))


@pytest.mark.parametrize(
    ("status", "code", "expected_exit"),
    [
        (404, "NOT_FOUND", 3),
        (401, "UNAUTHORIZED", 4),
        (409, "CONFLICT", 5),
        (400, "PARAM_INVALID", 1),
        (500, "INTERNAL", 6),
    ],
)
def test_a_failing_command_prints_one_error_line_and_exits_with_its_code(
    stub: tuple[StubApi, str], cli: CliRunner, status: int, code: str, expected_exit: int
) -> None:
    api, _ = stub
    api.on("GET", "/v1/endpoints/ep_nope", error(status, code, "endpoint ep_nope not found", "id"))
    result = run(cli, "endpoints", "get", "ep_nope")
    assert result.exit_code == expected_exit, result.output
    assert result.stdout == ""
    assert result.stderr == f"error: {code}: endpoint ep_nope not found (field: id)\n"


def test_connection_refused_exits_6(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner(env={"EDGECRON_URL": f"http://127.0.0.1:{closed_port()}", "EDGECRON_API_KEY": KEY})
    result = run(runner, "endpoints", "list")
    assert result.exit_code == 6
    assert result.stderr.startswith("error: cannot reach http://127.0.0.1:")


def test_nothing_configured_exits_2_with_a_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner(env={"EDGECRON_URL": None, "EDGECRON_API_KEY": None, "EDGECRON_ADMIN_KEY": None})
    result = run(runner, "endpoints", "list")
    assert result.exit_code == 2
    assert "the API URL is not configured" in result.stderr
    assert "edgecron local" in result.stderr


def test_local_json_configures_the_cli(
    stub: tuple[StubApi, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api, url = stub
    (tmp_path / ".edgecron").mkdir()
    (tmp_path / ".edgecron" / "local.json").write_text(
        json.dumps({"api_url": url, "api_key": "ek_from_file"})
    )
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    api.on("GET", "/v1/usage", Reply(200, {"month": "2026-01", "total": 0}))
    runner = CliRunner(env={"EDGECRON_URL": None, "EDGECRON_API_KEY": None, "EDGECRON_ADMIN_KEY": None})
    assert run(runner, "usage", "--json").exit_code == 0
    assert api.seen("GET", "/v1/usage")[0].headers["authorization"] == "Bearer ek_from_file"


def test_global_flags_override_the_environment(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("GET", "/v1/usage", Reply(200, {"month": "2026-01"}))
    assert run(cli, "--api-key", "ek_flag", "--json", "usage").exit_code == 0
    assert api.seen("GET", "/v1/usage")[0].headers["authorization"] == "Bearer ek_flag"


def test_bad_flags_are_usage_errors(cli: CliRunner) -> None:
    assert run(cli, "endpoints", "list", "--limit", "0").exit_code == 2
    assert run(cli, "endpoints", "list", "--no-such-flag").exit_code == 2
    assert run(cli, "runs", "create", "ep_1", "--payload", "{bad").exit_code == 2
    assert run(cli, "schedules", "create").exit_code == 2  # neither --cron nor --at
    assert run(cli, "endpoints", "update", "ep_1").exit_code == 2  # nothing to change


def test_list_json_all_prints_one_object_with_every_item(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on(
        "GET",
        "/v1/dead-letters",
        Reply(200, {"data": [{"id": "run_1"}], "next_cursor": "c1"}),
        Reply(200, {"data": [{"id": "run_2"}], "next_cursor": None}),
    )
    result = run(cli, "dead-letters", "list", "--endpoint", "ep_1", "--all", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"data": [{"id": "run_1"}, {"id": "run_2"}]}
    assert all(seen.query["endpoint_id"] == "ep_1" for seen in api.seen("GET", "/v1/dead-letters"))


def test_list_json_without_all_is_the_raw_page(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    page = {"data": [{"id": "evt_1", "name": "a.b"}], "next_cursor": "c1"}
    api.on("GET", "/v1/events", Reply(200, page))
    result = run(cli, "events", "list", "--name", "a.b", "--limit", "1", "--json")
    assert json.loads(result.stdout) == page
    assert api.seen("GET", "/v1/events")[0].query == {"name": "a.b", "limit": "1"}


def test_tables_for_people(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on(
        "GET",
        "/v1/retry-policies",
        Reply(200, {"data": [{"id": "rp_1", "strategy": "fixed", "max_attempts": 2}], "next_cursor": None}),
    )
    result = run(cli, "retry-policies", "list")
    assert result.exit_code == 0
    assert "rp_1" in result.stdout and "fixed" in result.stdout and "max_attempts" in result.stdout


ENDPOINT = {
    "id": "ep_1",
    "url": "http://127.0.0.1:9/hook",
    "description": None,
    "method": "POST",
    "headers": {"Authorization": "Bearer receiver-token"},
    "timeout_ms": 10000,
    "retry_policy_id": None,
    "filter_events": ["invoice.*"],
    "active": True,
    "created_at": "2026-01-01T00:00:00.000Z",
    "updated_at": "2026-01-01T00:00:00.000Z",
}


def test_endpoint_create_shows_the_secret_once_and_sends_the_flags(
    stub: tuple[StubApi, str], cli: CliRunner
) -> None:
    api, _ = stub
    api.on("POST", "/v1/endpoints", Reply(201, {**ENDPOINT, "secret": "whsec_abc"}))
    result = run(
        cli,
        "endpoints",
        "create",
        "http://127.0.0.1:9/hook",
        "--header",
        "Authorization: Bearer receiver-token",
        "--event",
        "invoice.*",
        "--method",
        "put",
        "--idempotency-key",
        "once",
    )
    assert result.exit_code == 0, result.output
    assert "whsec_abc" in result.stdout
    assert "receiver-token" not in result.stdout  # header values are masked for people
    assert KEY not in result.output
    (seen,) = api.seen("POST", "/v1/endpoints")
    assert seen.body == {
        "url": "http://127.0.0.1:9/hook",
        "method": "PUT",
        "headers": {"Authorization": "Bearer receiver-token"},
        "filter_events": ["invoice.*"],
    }
    assert seen.headers["idempotency-key"] == "once"


def test_endpoint_get_never_shows_a_secret_or_header_value(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("GET", "/v1/endpoints/ep_1", Reply(200, ENDPOINT))
    result = run(cli, "endpoints", "get", "ep_1")
    assert result.exit_code == 0
    assert "receiver-token" not in result.stdout and "whsec" not in result.stdout
    assert "Authorization" in result.stdout


def test_update_sends_only_the_flags_given(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("PATCH", "/v1/endpoints/ep_1", Reply(200, ENDPOINT))
    assert run(cli, "endpoints", "update", "ep_1", "--inactive", "--no-retry-policy").exit_code == 0
    assert api.seen("PATCH", "/v1/endpoints/ep_1")[0].body == {"active": False, "retry_policy_id": None}


def test_delete_json_gives_scripts_an_object(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("DELETE", "/v1/schedules/sch_1", Reply(204))
    result = run(cli, "schedules", "delete", "sch_1", "--json")
    assert json.loads(result.stdout) == {"id": "sch_1", "deleted": True}


def test_payload_from_a_file(stub: tuple[StubApi, str], cli: CliRunner, tmp_path: Path) -> None:
    api, _ = stub
    (tmp_path / "payload.json").write_text('{"order": 7}')
    api.on("POST", "/v1/events", Reply(202, {"id": "evt_1", "name": "order.paid", "payload": {"order": 7}}))
    result = run(cli, "events", "publish", "order.paid", "--payload", "@payload.json", "--json")
    assert result.exit_code == 0, result.output
    assert api.seen("POST", "/v1/events")[0].body == {"name": "order.paid", "payload": {"order": 7}}


def test_apps_use_the_admin_key_and_show_the_api_key_once(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    created = {
        "app": {"id": "app_1", "name": "b", "monthly_quota": 5, "created_at": "x"},
        "api_key": "ek_new",
    }
    api.on("POST", "/v1/apps", Reply(201, created))
    result = run(cli, "apps", "create", "b", "--quota", "5")
    assert result.exit_code == 0, result.output
    assert "ek_new" in result.stdout
    (seen,) = api.seen("POST", "/v1/apps")
    assert seen.headers["authorization"] == f"Bearer {ADMIN}"
    assert seen.body == {"name": "b", "monthly_quota": 5}


KEY_ROW = {
    "id": "key_" + "a" * 64,
    "prefix": "ek_AbCd",
    "name": "billing",
    "state": "active",
    "created_at": "2026-06-01T12:00:00.000Z",
    "last_used_at": None,
    "expires_at": None,
    "replaced_by": None,
}


def test_apps_and_their_keys_are_listed_with_the_admin_key(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    app_row = {"id": "app_1", "name": "b", "monthly_quota": None, "created_at": "x"}
    api.on("GET", "/v1/apps", Reply(200, {"data": [app_row], "next_cursor": None}))
    api.on("GET", "/v1/apps/app_1/keys", Reply(200, {"data": [KEY_ROW], "next_cursor": None}))
    apps_out = run(cli, "apps", "list")
    assert apps_out.exit_code == 0 and "app_1" in apps_out.stdout, apps_out.output
    keys_out = run(cli, "apps", "keys", "list", "app_1")
    assert keys_out.exit_code == 0, keys_out.output
    assert "ek_AbCd" in keys_out.stdout and "billing" in keys_out.stdout and "never" in keys_out.stdout
    assert {s.headers["authorization"] for s in api.requests} == {f"Bearer {ADMIN}"}


def test_a_created_key_is_printed_once_with_its_name(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("POST", "/v1/apps/app_1/keys", Reply(201, {"key": KEY_ROW, "api_key": "ek_AbCd_secret"}))
    result = run(cli, "apps", "keys", "create", "app_1", "--name", "billing")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("ek_AbCd_secret") == 1 and "shown once" in result.stdout
    assert api.seen("POST", "/v1/apps/app_1/keys")[0].body == {"name": "billing"}


@pytest.mark.parametrize(
    ("flag", "seconds"), [([], 86400), (["--grace-period", "15m"], 900), (["--grace-period", "0"], 0)]
)
def test_rotate_sends_the_grace_period_and_says_until_when_the_old_key_works(
    stub: tuple[StubApi, str], cli: CliRunner, flag: list[str], seconds: int
) -> None:
    api, _ = stub
    key_id = KEY_ROW["id"]
    previous = (
        None if seconds == 0 else {**KEY_ROW, "state": "expiring", "expires_at": "2026-06-02T12:00:00.000Z"}
    )
    rotated = {"key": {**KEY_ROW, "id": "key_" + "b" * 64}, "api_key": "ek_new_secret", "previous": previous}
    api.on("POST", f"/v1/apps/app_1/keys/{key_id}/rotate", Reply(201, rotated))
    result = run(cli, "apps", "keys", "rotate", "app_1", str(key_id), *flag)
    assert result.exit_code == 0, result.output
    assert api.seen("POST", f"/v1/apps/app_1/keys/{key_id}/rotate")[0].body == {"grace_period_sec": seconds}
    assert "ek_new_secret" in result.stdout
    assert ("until 2026-06-02T12:00:00.000Z" if seconds else "revoked now") in result.stdout


def test_a_grace_period_that_is_no_duration_is_a_usage_error(cli: CliRunner) -> None:
    assert run(cli, "apps", "keys", "rotate", "app_1", "key_x", "--grace-period", "tomorrow").exit_code == 2


def test_revoke_names_the_key_and_a_missing_one_exits_3(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    key_id = str(KEY_ROW["id"])
    api.on(
        "DELETE",
        f"/v1/apps/app_1/keys/{key_id}",
        Reply(200, KEY_ROW),
        Reply(404, {"error": {"code": "NOT_FOUND", "message": "API key not found", "field": "key_id"}}),
    )
    first = run(cli, "apps", "keys", "revoke", "app_1", key_id)
    assert first.exit_code == 0 and f"revoked ek_AbCd… ({key_id})" in first.stdout.replace("\n", ""), (
        first.output
    )
    assert run(cli, "apps", "keys", "revoke", "app_1", key_id).exit_code == 3


def test_set_quota_needs_a_quota_or_unlimited(cli: CliRunner) -> None:
    assert run(cli, "apps", "set-quota", "app_1").exit_code == 2
    assert run(cli, "apps", "set-quota", "app_1", "5", "--unlimited").exit_code == 2


def test_set_rate_limit_needs_a_rate_or_clear(cli: CliRunner) -> None:
    assert run(cli, "apps", "set-rate-limit", "app_1").exit_code == 2
    assert run(cli, "apps", "set-rate-limit", "app_1", "5", "--clear").exit_code == 2


def run_state(status: str, attempts: int = 0) -> Reply:
    return Reply(200, {"id": "run_1", "status": status, "attempt_count": attempts, "next_retry_at": None})


def attempt(number: int, code: int, outcome: str) -> dict[str, Any]:
    return {
        "attempt_number": number,
        "series": 1,
        "sequence": number,
        "request_id": f"req_{number}",
        "status_code": code,
        "latency_ms": 5,
        "error": None,
        "error_kind": None,
        "outcome": outcome,
    }


def test_watch_prints_each_attempt_once_and_exits_0_on_success(
    stub: tuple[StubApi, str], cli: CliRunner
) -> None:
    api, _ = stub
    api.on(
        "GET",
        "/v1/task-runs/run_1",
        run_state("pending"),
        run_state("retry_scheduled", 1),
        run_state("success", 2),
    )
    first = attempt(1, 500, "retry")
    api.on(
        "GET",
        "/v1/task-runs/run_1/attempts",
        Reply(200, {"data": [], "next_cursor": None}),
        Reply(200, {"data": [first], "next_cursor": None}),
        Reply(200, {"data": [first, attempt(2, 200, "success")], "next_cursor": None}),
    )
    result = run(cli, "runs", "watch", "run_1", "--interval", "0.1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("attempt")] == [
        "attempt 1 (series 1): 500 in 5 ms, retry",
        "attempt 2 (series 1): 200 in 5 ms, success",
    ]
    assert lines[-1] == "run run_1: success"


def test_attempts_show_the_sentence_and_the_detail_only_when_asked(
    stub: tuple[StubApi, str], cli: CliRunner
) -> None:
    api, _ = stub
    failed = {
        **attempt(1, 0, "retry"),
        "status_code": None,
        "error": "connection refused (127.0.0.1:8009)",
        "error_kind": "network",
        "error_detail": "ConnectionError: NewConnectionError: [Errno 111] Connection refused",
    }
    api.on("GET", "/v1/task-runs/run_1/attempts", Reply(200, {"data": [failed], "next_cursor": None}))
    plain = run(cli, "runs", "attempts", "run_1")
    assert plain.exit_code == 0, plain.output
    assert "connection refused (127.0.0.1:8009)" in plain.stdout and "Errno 111" not in plain.stdout
    detailed = run(cli, "runs", "attempts", "run_1", "--detail")
    assert detailed.exit_code == 0, detailed.output
    assert "error_detail" in detailed.stdout and "Errno 111" in detailed.stdout


def test_watch_json_streams_attempts_then_the_run_and_exits_1_on_dead_letter(
    stub: tuple[StubApi, str], cli: CliRunner
) -> None:
    api, _ = stub
    api.on("GET", "/v1/task-runs/run_1", run_state("running"), run_state("dead_letter", 1))
    api.on(
        "GET",
        "/v1/task-runs/run_1/attempts",
        Reply(200, {"data": [], "next_cursor": None}),
        Reply(200, {"data": [attempt(1, 500, "dead_letter")], "next_cursor": None}),
    )
    result = run(cli, "runs", "watch", "run_1", "--interval", "0.1", "--json")
    assert result.exit_code == 1
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert objects[0] == {"attempt": attempt(1, 500, "dead_letter")}
    assert objects[-1]["run"]["status"] == "dead_letter"


def test_watch_gives_up_after_the_timeout_with_exit_1(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("GET", "/v1/task-runs/run_1", run_state("pending"))
    api.on("GET", "/v1/task-runs/run_1/attempts", Reply(200, {"data": [], "next_cursor": None}))
    started = time.monotonic()
    result = run(cli, "runs", "watch", "run_1", "--interval", "0.1", "--timeout", "0.5")
    assert result.exit_code == 1
    assert time.monotonic() - started < 5
    assert "still pending" in result.stderr


def test_watch_of_a_missing_run_exits_3(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    assert run(cli, "runs", "watch", "run_nope").exit_code == 3


def test_replay_all_loops_while_has_more_with_the_filters(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on(
        "GET",
        "/v1/dead-letters",
        Reply(200, {"data": [{"id": f"run_{i}"} for i in range(3)], "next_cursor": None}),
    )
    api.on(
        "POST",
        "/v1/dead-letters/replay",
        Reply(200, {"replayed": 2, "skipped": 0, "has_more": True, "next_cursor": "c1"}),
        Reply(200, {"replayed": 0, "skipped": 0, "has_more": True, "next_cursor": "c2"}),
        Reply(200, {"replayed": 1, "skipped": 0, "has_more": False, "next_cursor": None}),
    )
    result = run(cli, "dead-letters", "replay-all", "--error-kind", "http_5xx", "--batch", "2", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"replayed": 3, "skipped": 0, "has_more": False, "calls": 3}
    calls = api.seen("POST", "/v1/dead-letters/replay")
    assert len(calls) == 3  # a call that replayed nothing but moved on is followed
    for call in calls:
        assert call.body["error_kind"] == "http_5xx" and call.body["limit"] == 2
        assert call.body["until"].endswith("Z")  # pinned to the start, so re-dead-lettered runs never loop
    assert calls[0].body["until"] == calls[1].body["until"] == calls[2].body["until"]
    assert [call.body.get("cursor") for call in calls] == [None, "c1", "c2"]


def test_replay_all_stops_when_an_answer_has_nowhere_to_resume(
    stub: tuple[StubApi, str], cli: CliRunner
) -> None:
    api, _ = stub
    api.on("GET", "/v1/dead-letters", Reply(200, {"data": [{"id": "run_1"}], "next_cursor": None}))
    api.on("POST", "/v1/dead-letters/replay", Reply(200, {"replayed": 0, "skipped": 1, "has_more": True}))
    result = run(cli, "dead-letters", "replay-all")
    assert result.exit_code == 0, result.output
    assert len(api.seen("POST", "/v1/dead-letters/replay")) == 1
    assert "replayed 0, skipped 1" in result.stdout


def test_schedule_get_with_preview(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("GET", "/v1/schedules/sch_1", Reply(200, {"id": "sch_1", "preview": ["2030-01-01T00:00:00.000Z"]}))
    result = run(cli, "schedules", "get", "sch_1", "--preview", "3")
    assert result.exit_code == 0, result.output
    assert "2030-01-01T00:00:00.000Z" in result.stdout
    assert api.seen("GET", "/v1/schedules/sch_1")[0].query == {"preview": "3"}


def test_no_command_prints_the_configured_key(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("GET", "/v1/usage", error(401, "UNAUTHORIZED", "missing or invalid API key"))
    result = run(cli, "usage")
    assert result.exit_code == 4
    assert KEY not in result.output and ADMIN not in result.output


def test_schedule_jitter_and_overlap_flags_are_sent(stub: tuple[StubApi, str], cli: CliRunner) -> None:
    api, _ = stub
    api.on("POST", "/v1/schedules", Reply(201, {"id": "sch_1", "jitter_sec": 300, "overlap_policy": "SKIP"}))
    api.on("PATCH", "/v1/schedules/sch_1", Reply(200, {"id": "sch_1", "overlap_policy": "BUFFER_ONE"}))
    created = run(
        cli, "schedules", "create", "--cron", "0 * * * *", "--jitter-sec", "300", "--overlap-policy", "skip"
    )
    assert created.exit_code == 0, created.output
    assert "overlap_policy" in created.stdout and "SKIP" in created.stdout
    assert api.seen("POST", "/v1/schedules")[0].body == {
        "cron": "0 * * * *",
        "jitter_sec": 300,
        "overlap_policy": "SKIP",
    }
    updated = run(cli, "schedules", "update", "sch_1", "--overlap-policy", "BUFFER_ONE", "--jitter-sec", "0")
    assert updated.exit_code == 0, updated.output
    assert api.seen("PATCH", "/v1/schedules/sch_1")[0].body == {
        "jitter_sec": 0,
        "overlap_policy": "BUFFER_ONE",
    }
    assert run(cli, "schedules", "create", "--cron", "0 * * * *", "--jitter-sec", "3601").exit_code == 2
