"""The local stack (`edgecron local`) as a real process, for the e2e tests and the benchmarks: free
ports, a temporary state dir, a bounded wait for readiness, restarts that keep both, a clean stop.

Environment:
- EDGECRON_LOCAL_SCAN_INTERVAL: seconds between scans (default 2; the stack's default is every minute).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import ClassVar

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
READY_MARK = "EdgeCron local stack ready on "
RUN_MARK = "--- edgecron local, run "
START_TIMEOUT_SEC = 60.0
STOP_TIMEOUT_SEC = 45.0
DEFAULT_SCAN_INTERVAL = "2"
DENIALS_FILE = "iam-denials.jsonl"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class LocalStackProcess:
    """One `edgecron local` process; restart() keeps its ports and state dir, like a developer would."""

    started: ClassVar[list[LocalStackProcess]] = []  # every stack of the session, for the IAM denial check

    def __init__(
        self,
        state_dir: Path,
        scan_interval: str,
        root: Path = ROOT,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.extra_args = extra_args
        self.env = dict(env or {})  # added to the environment of every start
        self.state_dir = state_dir
        self.root = root
        self.port = free_port()
        self.aws_port = free_port()
        self.scan_interval = scan_interval
        self.api_url = ""
        self.api_key = ""
        self.admin_key = ""
        self.app_id = ""
        self.aws_endpoint_url = ""
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._runs = 0

    def output(self, since: int = 0) -> str:
        """What the stack printed (all runs, stdout and stderr interleaved), from a `mark()` on if given."""
        with self._lock:
            return "".join(self._lines[since:])

    def mark(self) -> int:
        """A position in the output, for `output(since=...)`: what one test made the stack print."""
        with self._lock:
            return len(self._lines)

    def start(self) -> None:
        """Start and wait (bounded) for the ready line, local.json and a 200 from GET /openapi.json."""
        python_path = os.pathsep.join(
            [str(self.root / "layers" / "core"), str(ROOT / "cli"), os.environ.get("PYTHONPATH", "")]
        )
        env = {
            **os.environ,
            **self.env,
            "PYTHONPATH": python_path,
            "EDGECRON_LOCAL_SCAN_INTERVAL": self.scan_interval,
        }
        self._runs += 1
        refused = len(self.denials())
        if self not in LocalStackProcess.started:
            LocalStackProcess.started.append(self)
        with self._lock:
            self._lines.append(f"{RUN_MARK}{self._runs} ---\n")
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "edgecron_cli.main",
                "local",
                "--root",
                str(self.root),
                "--port",
                str(self.port),
                "--aws-port",
                str(self.aws_port),
                "--state-dir",
                str(self.state_dir),
                *self.extra_args,
            ],
            cwd=self.root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, args=(self._process,), daemon=True)
        self._reader.start()
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while READY_MARK not in self._last_run():
            self._fail_if_dead("exited before it was ready")
            if time.monotonic() > deadline:
                self._process.kill()
                pytest.fail(
                    f"the local stack was not ready within {START_TIMEOUT_SEC:.0f} s:\n{self.output()}"
                )
            time.sleep(0.1)
        local = json.loads((self.state_dir / "local.json").read_text())
        self.api_url = local["api_url"]
        self.api_key = local["api_key"]
        self.admin_key = local["admin_key"]
        self.app_id = local["app_id"]
        self.aws_endpoint_url = local["aws_endpoint_url"]
        while requests.get(f"{self.api_url}/openapi.json", timeout=10).status_code != 200:
            self._fail_if_dead("exited while serving /openapi.json")
            if time.monotonic() > deadline:
                pytest.fail(f"GET /openapi.json never answered 200:\n{self.output()}")
            time.sleep(0.2)
        if self.denials()[refused:]:  # the start-up (catch-up, default App) made a refused call
            pytest.fail("\n".join(["AWS would refuse (IAM):", *self.denials()[refused:]]), pytrace=False)

    def stop(self) -> int:
        """SIGINT (Ctrl-C) and wait for a clean exit; the exit status."""
        assert self._process is not None
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            try:
                self._process.wait(STOP_TIMEOUT_SEC)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._reader is not None:
            self._reader.join(5)
        return self._process.returncode

    @property
    def pid(self) -> int:
        """The stack's process id (moto's process and the queue consumers' are its children)."""
        assert self._process is not None
        return self._process.pid

    def child(self, module: str) -> int:
        """The process id of the stack's one child running `module` (python -m)."""
        (found,) = [
            child
            for child in _children(self.pid)
            if module.encode() in Path(f"/proc/{child}/cmdline").read_bytes()
        ]
        return found

    def wait(self, timeout: float) -> int | None:
        """Wait up to `timeout` s for the stack to exit by itself; its exit status, or None if it runs on."""
        assert self._process is not None
        try:
            status = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        if self._reader is not None:
            self._reader.join(5)
        return status

    def kill(self) -> None:
        """SIGKILL: the process dies wherever it is, as a crashed machine or runtime would."""
        assert self._process is not None
        self._process.kill()
        self._process.wait()
        if self._reader is not None:
            self._reader.join(5)

    def restart(self) -> None:
        status = self.stop()
        assert status == 0, f"the local stack exited with {status}:\n{self.output()}"
        self.start()

    def denials(self) -> list[str]:
        """The calls IAM refused so far (one line each: function, action, resource)."""
        path = self.state_dir / DENIALS_FILE
        if not path.is_file():
            return []
        found = []
        for line in path.read_text(encoding="utf-8").splitlines():
            denial = json.loads(line)
            found.append(
                f"AccessDenied: {denial['function']} may not {denial['action']} on {denial['resource']}"
            )
        return found

    def _last_run(self) -> str:
        output = self.output()
        return output[output.rfind(RUN_MARK) :]

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._lock:
                self._lines.append(line)

    def _fail_if_dead(self, what: str) -> None:
        assert self._process is not None
        if self._process.poll() is not None:
            if self._reader is not None:
                self._reader.join(5)
            pytest.fail(f"the local stack {what} (status {self._process.returncode}):\n{self.output()}")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(entry.joinpath("stat").read_text().rpartition(")")[2].split()[1])
            except (FileNotFoundError, ProcessLookupError):
                continue
            if ppid == pid:
                found.append(int(entry.name))
    return found


def process_gone(pid: int, within: float) -> bool:
    """Whether the process exits (or is a zombie, exited but not reaped) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rpartition(")")[2].split()[0] == "Z":
            return True
        time.sleep(0.05)
    return False
