"""The queue consumers' process on the local stack: a child of the stack's process that delivers what the
API enqueues, stops with the stack, and whose death stops the stack with status 1 (logged) instead of
leaving the queues unconsumed."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgecron_testing.api import Api
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver

pytestmark = pytest.mark.e2e

MODULE = b"edgecron_cli.local.consumers_process"


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


def _consumers_process(stack: LocalStackProcess) -> int:
    (consumers,) = [
        child for child in _children(stack.pid) if MODULE in Path(f"/proc/{child}/cmdline").read_bytes()
    ]
    return consumers


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rpartition(")")[2].split()[0] == "Z":  # exited, not yet reaped
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def own_stack(tmp_path: Path) -> Iterator[LocalStackProcess]:
    """A stack of the test's own (its consumers' process gets killed); stopped whatever the test did."""
    stack = LocalStackProcess(tmp_path / "state", "60")
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


def test_the_consumers_deliver_from_a_process_of_their_own_that_stops_with_the_stack(
    own_stack: LocalStackProcess,
) -> None:
    consumers = _consumers_process(own_stack)
    assert f"the queue consumers run in their own process (pid {consumers}," in own_stack.output()
    receiver = Receiver()
    try:
        api = Api(own_stack.api_url, own_stack.api_key)
        endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/consumed")})["id"]
        run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint, "payload": {"n": 1}})
        (arrival,) = receiver.wait_for("/consumed", 1, timeout=30)
        assert arrival.headers.get("webhook-id") == run["id"]
    finally:
        receiver.close()
    assert own_stack.stop() == 0
    assert _gone(consumers, within=5)
    assert "stopping the queue consumers" in own_stack.output()


def test_a_stack_whose_consumers_process_dies_says_so_and_exits_with_status_1(
    own_stack: LocalStackProcess,
) -> None:
    os.kill(_consumers_process(own_stack), signal.SIGKILL)
    status = own_stack.wait(60)
    assert status is not None, f"the stack ran on without its queue consumers:\n{own_stack.output()}"
    assert status == 1
    assert (
        f"the queue consumers' process exited unexpectedly (status {-signal.SIGKILL})" in own_stack.output()
    )
    assert "saving" in own_stack.output()  # moto is alive: what the API wrote is kept


def test_the_consumers_process_exits_when_the_stack_s_process_is_killed(own_stack: LocalStackProcess) -> None:
    consumers = _consumers_process(own_stack)
    os.kill(own_stack.pid, signal.SIGKILL)
    assert own_stack.wait(10) is not None
    assert _gone(consumers, within=10)
