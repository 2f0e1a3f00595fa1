"""Hostile receivers against the local stack: raw socket servers on 127.0.0.1 that answer 429 with a
huge, negative or garbage Retry-After, dribble bytes, send 10 MB, redirect, reset the connection, hang
after the headers, send an invalid status line or ask (clearly or garbled) to stop the retries. Every HTTP call is exactly one recorded attempt, no
run stays running, and the worker never crashes."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from edgecron_testing import hostile
from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import LocalStackProcess

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Case:
    name: str
    behaviour: hostile.Behaviour
    status: str  # the run's final status
    attempts: int  # with max_attempts 2
    error_kind: str | None  # of the last attempt


CASES = [
    Case("retry-after-huge", hostile.too_many_requests("9" * 400), "dead_letter", 2, "http_429"),
    Case("retry-after-negative", hostile.too_many_requests("-5"), "failed", 1, "http_429"),
    Case("retry-after-garbage", hostile.too_many_requests("soon\x01"), "failed", 1, "http_429"),
    Case("dribble", hostile.dribble(0.5), "dead_letter", 2, "timeout"),
    Case("10-mb-body", hostile.huge_body(), "success", 1, None),
    Case("redirect", hostile.redirect_to_self(), "failed", 1, "redirect"),
    Case("reset", hostile.reset_connection(), "dead_letter", 2, "network"),
    Case("hang-after-headers", hostile.hang_after_headers(), "dead_letter", 2, "timeout"),
    Case("invalid-status-line", hostile.invalid_status_line(), "dead_letter", 2, "invalid_response"),
    Case("header-line-too-long", hostile.header_line_too_long(), "dead_letter", 2, "invalid_response"),
    Case("stop-retrying", hostile.unavailable_with_retry_directive("Stop"), "failed", 1, "receiver_stopped"),
    Case("stop-garbled", hostile.unavailable_with_retry_directive("\xffst\x01op"), "dead_letter", 2, None),
]


@pytest.fixture
def receivers() -> Iterator[dict[str, hostile.HostileReceiver]]:
    started = {
        case.name: hostile.HostileReceiver(case.behaviour, hold_sec=20, lifetime_sec=110) for case in CASES
    }
    yield started
    for r in started.values():
        r.close()


def _attempts(api: Api, run_id: str) -> list[dict[str, Any]]:
    return list(api.all_pages(f"/v1/task-runs/{run_id}/attempts"))


def _last_kind(attempts: list[dict[str, Any]]) -> str | None:
    """The last attempt's error kind; a 429 (an HTTP answer, no error kind) as http_429."""
    if not attempts:
        return None
    last = attempts[-1]
    return last["error_kind"] or ("http_429" if last["status_code"] == 429 else None)


def test_every_call_to_a_hostile_receiver_is_one_recorded_attempt(
    local_stack: LocalStackProcess, receivers: dict[str, hostile.HostileReceiver]
) -> None:
    api = Api(local_stack.api_url, local_stack.api_key)
    mark = local_stack.mark()
    policy = api.ok(
        "POST",
        "/v1/retry-policies",
        {"strategy": "fixed", "max_attempts": 2, "base_delay_sec": 1, "max_delay_sec": 1},
    )["id"]
    runs: dict[str, str] = {}
    for case in CASES:
        ep = api.ok(
            "POST",
            "/v1/endpoints",
            {"url": receivers[case.name].url(f"/{case.name}"), "timeout_ms": 1000, "retry_policy_id": policy},
        )
        runs[case.name] = api.ok("POST", "/v1/task-runs", {"endpoint_id": ep["id"]})["id"]

    deadline = time.monotonic() + 90
    final = {
        name: api.wait_run(run_id, terminal, timeout=max(1.0, deadline - time.monotonic()))
        for name, run_id in runs.items()
    }
    time.sleep(1.5)  # a stray extra call would have arrived by now (retries are 1 s apart)

    problems = []
    for case in CASES:
        run = api.ok("GET", f"/v1/task-runs/{runs[case.name]}")
        history = _attempts(api, runs[case.name])
        receiver = receivers[case.name]
        got = (run["status"], len(history), _last_kind(history), receiver.requests, receiver.connections)
        want = (case.status, case.attempts, case.error_kind, case.attempts, case.attempts)
        if got != want or run != final[case.name]:
            problems.append(f"{case.name}: (status, attempts, kind, requests, connections) {got} != {want}")
    assert not problems, "\n".join(problems)

    output = local_stack.output(since=mark)
    assert not re.search(r"WorkerFunction#\d+ failed", output), output[-5000:]
    assert "Traceback" not in output, output[-5000:]
