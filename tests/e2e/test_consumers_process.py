"""The queue consumers' process on the local stack: a child of the stack's process that delivers what the
API enqueues, stops with the stack, and whose death stops the stack with status 1 (logged) instead of
leaving the queues unconsumed."""

from __future__ import annotations

import os
import signal

import pytest

from edgecron_testing.api import Api
from edgecron_testing.local_stack import LocalStackProcess, process_gone
from edgecron_testing.receiver import Receiver

pytestmark = pytest.mark.e2e


def test_the_consumers_deliver_from_a_process_of_their_own_that_stops_with_the_stack(
    throwaway_stack: LocalStackProcess,
) -> None:
    consumers = throwaway_stack.child("edgecron_cli.local.consumers_process")
    assert f"the queue consumers run in their own process (pid {consumers}," in throwaway_stack.output()
    receiver = Receiver()
    try:
        api = Api(throwaway_stack.api_url, throwaway_stack.api_key)
        endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/consumed")})["id"]
        run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint, "payload": {"n": 1}})
        (arrival,) = receiver.wait_for("/consumed", 1, timeout=30)
        assert arrival.headers.get("webhook-id") == run["id"]
    finally:
        receiver.close()
    assert throwaway_stack.stop() == 0
    assert process_gone(consumers, within=5)
    assert "stopping the queue consumers" in throwaway_stack.output()


def test_a_stack_whose_consumers_process_dies_says_so_and_exits_with_status_1(
    throwaway_stack: LocalStackProcess,
) -> None:
    os.kill(throwaway_stack.child("edgecron_cli.local.consumers_process"), signal.SIGKILL)
    status = throwaway_stack.wait(60)
    assert status is not None, f"the stack ran on without its queue consumers:\n{throwaway_stack.output()}"
    assert status == 1
    assert (
        f"the queue consumers' process exited unexpectedly (status {-signal.SIGKILL})"
        in throwaway_stack.output()
    )
    assert "saving" in throwaway_stack.output()  # moto is alive: what the API wrote is kept


def test_the_consumers_process_exits_when_the_stack_s_process_is_killed(
    throwaway_stack: LocalStackProcess,
) -> None:
    consumers = throwaway_stack.child("edgecron_cli.local.consumers_process")
    os.kill(throwaway_stack.pid, signal.SIGKILL)
    assert throwaway_stack.wait(10) is not None
    assert process_gone(consumers, within=10)
