"""moto's process on the local stack: a child of the stack's process that stops with it, and whose death
stops the stack with status 1 (logged) instead of leaving it to hang on calls nobody answers."""

from __future__ import annotations

import os
import signal

import pytest

from edgecron_testing.local_stack import LocalStackProcess, process_gone

pytestmark = pytest.mark.e2e


def test_moto_runs_in_a_process_of_its_own_that_stops_with_the_stack(
    throwaway_stack: LocalStackProcess,
) -> None:
    moto = throwaway_stack.child("edgecron_cli.local.moto_process")
    assert f"in its own process (pid {moto})" in throwaway_stack.output()
    assert throwaway_stack.stop() == 0
    assert process_gone(moto, within=5)
    assert "saving" in throwaway_stack.output()


def test_a_stack_whose_moto_process_dies_says_so_and_exits_with_status_1(
    throwaway_stack: LocalStackProcess,
) -> None:
    os.kill(throwaway_stack.child("edgecron_cli.local.moto_process"), signal.SIGKILL)
    status = throwaway_stack.wait(60)
    assert status is not None, f"the stack ran on without moto:\n{throwaway_stack.output()}"
    assert status == 1
    assert f"moto's process exited unexpectedly (status {-signal.SIGKILL})" in throwaway_stack.output()
