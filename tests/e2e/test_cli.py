"""The `edgecron` CLI end to end: a whole story against the local stack using only `edgecron` commands.

Each command runs as its own process (`python -m edgecron_cli.main ...`), configured by EDGECRON_URL
and EDGECRON_API_KEY, and the test reads its `--json` output and exit code, as a script would. The
story runs in a fresh App (created with `edgecron apps create`), so the usage counts are exact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from edgecron_testing.local_stack import ROOT, LocalStackProcess
from edgecron_testing.receiver import Receiver, Reply

pytestmark = pytest.mark.e2e

COMMAND_TIMEOUT_SEC = 120.0
WAIT_SEC = 45.0


class Cli:
    """Runs `edgecron` as a subprocess with the given configuration, from a directory without local.json."""

    def __init__(self, cwd: Path, url: str, api_key: str | None = None, admin_key: str | None = None) -> None:
        self.cwd = cwd
        env = {k: v for k, v in os.environ.items() if not k.startswith("EDGECRON_")}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "layers" / "core"), str(ROOT / "cli"), os.environ.get("PYTHONPATH", "")]
        )
        env["EDGECRON_URL"] = url
        if api_key:
            env["EDGECRON_API_KEY"] = api_key
        if admin_key:
            env["EDGECRON_ADMIN_KEY"] = admin_key
        self.env = env

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "edgecron_cli.main", *args],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_SEC,
            check=False,
        )

    def json(self, *args: str) -> Any:
        """Run with --json; it must exit 0 and print one JSON document."""
        result = self.run(*args, "--json")
        assert result.returncode == 0, (args, result.returncode, result.stdout, result.stderr)
        return json.loads(result.stdout)

    def json_lines(self, *args: str) -> tuple[int, list[dict[str, Any]]]:
        result = self.run(*args, "--json")
        assert result.returncode in (0, 1), (args, result.returncode, result.stdout, result.stderr)
        return result.returncode, [json.loads(line) for line in result.stdout.splitlines() if line.strip()]

    def wait_for(self, args: tuple[str, ...], done: Callable[[Any], bool]) -> Any:
        """Repeat a --json command until its output satisfies `done`."""
        deadline = time.monotonic() + WAIT_SEC
        while True:
            out = self.json(*args)
            if done(out):
                return out
            assert time.monotonic() < deadline, f"{args} never reached the expected state: {out}"
            time.sleep(0.5)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_cli_story(local_stack: LocalStackProcess, receiver: Receiver, tmp_path: Path) -> None:
    month = datetime.now(UTC).strftime("%Y-%m")

    # An App of its own, so other tests' triggers never mix into its usage; with a quota, so its
    # direct runs are counted as they are delivered (not minutes later by the scan).
    admin = Cli(tmp_path, local_stack.api_url, admin_key=local_stack.admin_key)
    created = admin.json("apps", "create", f"cli-e2e-{uuid.uuid4().hex[:8]}", "--quota", "1000")
    assert created["api_key"].startswith("ek_")
    cli = Cli(tmp_path, local_stack.api_url, api_key=created["api_key"])

    # A retry policy and two endpoints: /ok receives the schedule and the event, /fail the direct run.
    policy = cli.json("retry-policies", "create", "--max-attempts", "2", "--base-delay-sec", "1")
    assert (policy["max_attempts"], policy["base_delay_sec"]) == (2, 1)
    ok = cli.json("endpoints", "create", receiver.url("/ok"), "--event", "order.*")
    assert ok["secret"].startswith("whsec_")  # shown at create
    fail = cli.json("endpoints", "create", receiver.url("/fail"), "--retry-policy", policy["id"])
    assert fail["retry_policy_id"] == policy["id"]
    fetched = cli.json("endpoints", "get", ok["id"])
    assert fetched["filter_events"] == ["order.*"] and "secret" not in fetched
    listed = cli.json("endpoints", "list", "--all")
    assert {e["id"] for e in listed["data"]} == {ok["id"], fail["id"]}
    receiver.script("/ok", Reply(200))
    receiver.script("/fail", Reply(500, b"boom"))

    # A one-time schedule a few seconds ahead: exactly one fire, delivered to /ok.
    at = (datetime.now(UTC) + timedelta(seconds=3)).isoformat(timespec="seconds").replace("+00:00", "Z")
    schedule = cli.json(
        "schedules", "create", "--at", at, "--endpoint", ok["id"], "--payload", '{"from": "schedule"}'
    )
    assert schedule["endpoint_ids"] == [ok["id"]]
    shown = cli.json("schedules", "get", schedule["id"], "--preview", "1")
    assert shown["id"] == schedule["id"] and "preview" in shown
    fires = cli.wait_for(
        ("schedules", "fires", schedule["id"]),
        lambda out: bool(out["data"]) and out["data"][0]["status"] == "COMPLETED",
    )
    assert len(fires["data"]) == 1
    assert fires["data"][0]["runs"][0]["status"] == "success"

    # An event, published twice with one idempotency key: one Event, one delivery to /ok.
    event = cli.json(
        "events", "publish", "order.created", "--payload", '{"order": 1}', "--idempotency-key", "order-1"
    )
    again = cli.json(
        "events", "publish", "order.created", "--payload", '{"order": 1}', "--idempotency-key", "order-1"
    )
    assert again["id"] == event["id"]
    delivered = cli.wait_for(
        ("events", "get", event["id"]),
        lambda out: (
            out["fanout_status"] == "done" and [d["status"] for d in out["deliveries"]] == ["success"]
        ),
    )
    assert delivered["deliveries"][0]["endpoint_id"] == ok["id"]
    assert [e["id"] for e in cli.json("events", "list", "--name", "order.created")["data"]] == [event["id"]]

    # A direct run to /fail (500): two attempts, then a dead letter; `runs watch` exits 1.
    run = cli.json("runs", "create", fail["id"], "--payload", '{"job": 7}')
    status, lines = cli.json_lines("runs", "watch", run["id"], "--timeout", "60")
    assert status == 1, lines
    assert [line["attempt"]["status_code"] for line in lines if "attempt" in line] == [500, 500]
    assert lines[-1]["run"]["status"] == "dead_letter"
    assert cli.json("runs", "get", run["id"])["status"] == "dead_letter"
    dead = cli.json("dead-letters", "list", "--endpoint", fail["id"], "--all")
    assert [d["id"] for d in dead["data"]] == [run["id"]]
    assert dead["data"][0]["last_error_kind"] == "http_5xx"

    # The receiver recovers; replaying the dead letter delivers it, and `runs watch` exits 0.
    receiver.script("/fail", Reply(200))
    replayed = cli.json("dead-letters", "replay", run["id"])
    assert replayed["status"] in {"pending", "running", "success"} and replayed["series"] == 2
    status, lines = cli.json_lines("runs", "watch", run["id"], "--timeout", "60")
    assert status == 0, lines
    assert lines[-1]["run"]["status"] == "success"
    attempts = cli.json("runs", "attempts", run["id"], "--all")["data"]
    assert [(a["series"], a["status_code"]) for a in attempts] == [(1, 500), (1, 500), (2, 200)]
    assert len(receiver.received("/fail")) == 3
    assert cli.json("dead-letters", "list")["data"] == []

    # Usage: one schedule fire, one event (the idempotent repeat is free), one direct run; retries
    # and the replay are not billed.
    usage = cli.json("usage", "--month", month)
    assert (usage["schedule"], usage["event"], usage["direct"], usage["total"]) == (1, 1, 1, 3)
    notes = cli.json("notifications", "list")["data"]  # the /fail endpoint's first failed run warned
    assert [(n["kind"], n["data"]["endpoint_id"]) for n in notes] == [("ENDPOINT_FAILING", fail["id"])]

    # Exit codes scripts rely on.
    missing = cli.run("endpoints", "get", "ep_nope")
    assert missing.returncode == 3, missing.stderr
    assert missing.stderr.startswith("error: NOT_FOUND: ")
    wrong_key = cli.run("--api-key", "wrong", "endpoints", "list")
    assert wrong_key.returncode == 4, wrong_key.stderr
    assert wrong_key.stderr.startswith("error: UNAUTHORIZED: ")
    assert created["api_key"] not in missing.stderr + wrong_key.stderr


def test_cli_recovers_what_failed(local_stack: LocalStackProcess, receiver: Receiver, tmp_path: Path) -> None:
    admin = Cli(tmp_path, local_stack.api_url, admin_key=local_stack.admin_key)
    created = admin.json("apps", "create", f"cli-recover-{uuid.uuid4().hex[:8]}")
    cli = Cli(tmp_path, local_stack.api_url, api_key=created["api_key"])
    since = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    receiver.script("/flaky", Reply(500), Reply(500), Reply(200))
    policy = cli.json("retry-policies", "create", "--max-attempts", "1")
    ep = cli.json("endpoints", "create", receiver.url("/flaky"), "--retry-policy", policy["id"])
    runs = [cli.json("runs", "create", ep["id"]) for _ in range(2)]
    for run in runs:
        cli.wait_for(("runs", "get", run["id"]), lambda r: r["status"] == "dead_letter")
    recovered = cli.json("endpoints", "recover", ep["id"], "--since", since)
    assert recovered["recovered"] == 2
    for run in runs:
        cli.wait_for(("runs", "get", run["id"]), lambda r: r["status"] == "success")
    assert len(receiver.received("/flaky")) == 4
