"""`edgecron listen` as a process, receiving real deliveries from the local stack: it verifies their
signatures with the endpoint's secret, prints one line per delivery and answers as scripted, so the
stack's retries show in its output."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import ROOT, LocalStackProcess, free_port

pytestmark = pytest.mark.e2e

START_TIMEOUT_SEC = 20.0


class ListenProcess:
    def __init__(
        self,
        args: list[str],
        stack: LocalStackProcess,
        cwd: Path,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
    ) -> None:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("EDGECRON_")}
        environment["PYTHONPATH"] = os.pathsep.join([str(ROOT / "layers" / "core"), str(ROOT / "cli")])
        environment["EDGECRON_URL"] = stack.api_url
        environment["EDGECRON_API_KEY"] = stack.api_key
        environment.update(env or {})
        self.port = free_port()
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-m", "edgecron_cli.main", "listen", "--port", str(self.port), *args],
            cwd=cwd,
            env=environment,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if stdin is not None:
            assert self.process.stdin is not None
            self.process.stdin.write(stdin)
            self.process.stdin.close()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while not any("edgecron listen on" in line for line in self.lines):
            assert self.process.poll() is None, "".join(self.lines)
            assert time.monotonic() < deadline, "".join(self.lines)
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def command_line(self) -> str:
        """What `ps` shows of the process."""
        return Path(f"/proc/{self.process.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()

    def deliveries(self) -> list[str]:
        return [line for line in self.lines if " attempt " in line]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture
def api(local_stack: LocalStackProcess) -> Api:
    return Api(local_stack.api_url, local_stack.api_key)


@pytest.fixture
def listen_for(local_stack: LocalStackProcess, tmp_path: Path) -> Iterator[list[ListenProcess]]:
    started: list[ListenProcess] = []
    yield started
    for process in started:
        process.stop()


def test_listen_verifies_real_deliveries_and_its_scripted_failures_drive_retries(
    local_stack: LocalStackProcess, api: Api, tmp_path: Path, listen_for: list[ListenProcess]
) -> None:
    policy = api.ok(
        "POST", "/v1/retry-policies", {"max_attempts": 3, "base_delay_sec": 1, "max_delay_sec": 1}
    )
    port = free_port()
    endpoint = api.ok(
        "POST", "/v1/endpoints", {"url": f"http://127.0.0.1:{port}/hook", "retry_policy_id": policy["id"]}
    )
    listener = ListenProcess(["--endpoint", endpoint["id"], "--fail-rate", "0.5"], local_stack, tmp_path)
    listen_for.append(listener)
    api.ok("PATCH", f"/v1/endpoints/{endpoint['id']}", {"url": listener.url})
    run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint["id"], "payload": {"order": 42}})
    done = api.wait_run(run["id"], terminal, timeout=60)
    assert done["status"] == "success" and done["attempt_count"] == 2
    lines = listener.deliveries()
    assert len(lines) == 2, listener.lines
    assert all(run["id"] in line and "verified" in line and "NOT VERIFIED" not in line for line in lines)
    assert "attempt 1" in lines[0] and "-> 503" in lines[0] and '"order"' in lines[0]
    assert "attempt 2" in lines[1] and "-> 200" in lines[1]
    assert not any(
        line.strip().startswith("whsec_") for line in listener.lines
    )  # the secret is never printed


def test_listen_flags_deliveries_signed_with_another_secret(
    local_stack: LocalStackProcess, api: Api, tmp_path: Path, listen_for: list[ListenProcess]
) -> None:
    other = api.ok("POST", "/v1/endpoints", {"url": "http://127.0.0.1:9/unused"})["secret"]
    listener = ListenProcess(["--secret", other, "--status", "204"], local_stack, tmp_path)
    listen_for.append(listener)
    endpoint = api.ok("POST", "/v1/endpoints", {"url": listener.url})
    run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint["id"]})
    assert api.wait_run(run["id"], terminal, timeout=60)["status"] == "success"
    (line,) = listener.deliveries()
    assert "NOT VERIFIED (no matching signature)" in line and "-> 204" in line
    assert any("visible to other users of this machine" in line for line in listener.lines)


@pytest.mark.parametrize("given", ["environment", "standard input"])
def test_listen_takes_the_secret_from_the_environment_or_standard_input_never_the_command_line(
    local_stack: LocalStackProcess, api: Api, tmp_path: Path, listen_for: list[ListenProcess], given: str
) -> None:
    endpoint = api.ok("POST", "/v1/endpoints", {"url": "http://127.0.0.1:9/not-yet"})
    secret = endpoint["secret"]
    if given == "environment":
        listener = ListenProcess([], local_stack, tmp_path, env={"EDGECRON_LISTEN_SECRET": secret})
    else:
        listener = ListenProcess(["--secret", "-"], local_stack, tmp_path, stdin=secret + "\n")
    listen_for.append(listener)
    assert secret not in listener.command_line()
    assert "verifying signatures" in "".join(listener.lines)
    api.ok("PATCH", f"/v1/endpoints/{endpoint['id']}", {"url": listener.url})
    run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint["id"], "payload": {"n": 1}})
    assert api.wait_run(run["id"], terminal, timeout=60)["status"] == "success"
    (line,) = listener.deliveries()
    assert run["id"] in line and "verified" in line and "NOT VERIFIED" not in line
    assert "command line" not in "".join(listener.lines)  # no warning: the secret was not there
