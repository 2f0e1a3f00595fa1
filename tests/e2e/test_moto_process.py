"""moto's process on the local stack: a child of the stack's process that stops with it, and whose death
stops the stack with status 1 (logged) instead of leaving it to hang on calls nobody answers."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgecron_testing.local_stack import LocalStackProcess

pytestmark = pytest.mark.e2e


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


def _moto_process(stack: LocalStackProcess) -> int:
    (moto,) = [
        child
        for child in _children(stack.pid)
        if b"edgecron_cli.local.moto_process" in Path(f"/proc/{child}/cmdline").read_bytes()
    ]
    return moto


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
    """A stack of the test's own (its moto gets killed); stopped whatever the test did."""
    stack = LocalStackProcess(tmp_path / "state", "60")
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


def test_moto_runs_in_a_process_of_its_own_that_stops_with_the_stack(own_stack: LocalStackProcess) -> None:
    moto = _moto_process(own_stack)
    assert f"in its own process (pid {moto})" in own_stack.output()
    assert own_stack.stop() == 0
    assert _gone(moto, within=5)
    assert "saving" in own_stack.output()


def test_a_stack_whose_moto_process_dies_says_so_and_exits_with_status_1(
    own_stack: LocalStackProcess,
) -> None:
    os.kill(_moto_process(own_stack), signal.SIGKILL)
    status = own_stack.wait(60)
    assert status is not None, f"the stack ran on without moto:\n{own_stack.output()}"
    assert status == 1
    assert f"moto's process exited unexpectedly (status {-signal.SIGKILL})" in own_stack.output()
