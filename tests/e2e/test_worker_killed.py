"""A worker killed mid-batch, on the local stack: the whole stack is SIGKILLed while a batch of
deliveries waits on a slow receiver (its claims written, its messages in flight). After a restart every
run completes, and each run's history holds one Attempt per HTTP call the receiver saw: the dead
worker's as `worker_lost`, then the successful one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver, Reply

BATCH = 3
CLAIM_SEC = 30  # longer than the slow reply, so nothing takes a claim over while its worker lives
SLOW_SEC = 24.0  # under the endpoint's 25 s timeout: the worker is still waiting when it is killed


@pytest.fixture(scope="module")
def kill_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStackProcess]:
    """A stack of this module's own (it gets killed), with short claims and redispatch."""
    stack = LocalStackProcess(
        tmp_path_factory.mktemp("killed-stack"),
        "2",
        env={
            "EDGECRON_LOCAL_CLAIM_SEC": str(CLAIM_SEC),
            "EDGECRON_LOCAL_REDISPATCH_AFTER_SEC": "10",
        },
    )
    stack.start()
    yield stack
    assert stack.stop() == 0


def _snapshot_statuses(stack: LocalStackProcess, run_ids: list[str]) -> dict[str, str]:
    """The runs' statuses in the stack's last snapshot (what a restart will find)."""
    try:
        document = json.loads((stack.state_dir / "state.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    out: dict[str, str] = {}
    for item in document["tables"].get("RunsTable", []):
        run_id = item.get("run_id", {}).get("S")
        if run_id in run_ids:
            out[run_id] = item["status"]["S"]
    return out


def test_a_worker_killed_mid_batch_loses_nothing_and_records_each_call_once(
    kill_stack: LocalStackProcess,
) -> None:
    api = Api(kill_stack.api_url, kill_stack.api_key)
    receiver = Receiver()
    try:
        receiver.script("/killed", *[Reply(delay_sec=SLOW_SEC)] * BATCH, Reply(200))
        ep = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/killed"), "timeout_ms": 25_000})
        runs = [
            api.ok("POST", "/v1/task-runs", {"endpoint_id": ep["id"], "payload": {"n": i}, "delay_sec": 2})
            for i in range(BATCH)
        ]
        run_ids = [str(r["id"]) for r in runs]
        receiver.wait_for("/killed", BATCH, timeout=60)  # every request is out, its worker waiting
        deadline = time.monotonic() + SLOW_SEC - 4
        while set(_snapshot_statuses(kill_stack, run_ids).values()) != {"running"}:
            assert time.monotonic() < deadline, _snapshot_statuses(kill_stack, run_ids)
            time.sleep(0.2)  # the claims reach the stack's state file (it is written every ~5 s)
        kill_stack.kill()
        killed_at = time.time()
        kill_stack.start()  # same ports, same state dir: a new API client is not needed
        final: dict[str, dict[str, Any]] = {
            run_id: api.wait_run(run_id, terminal, timeout=CLAIM_SEC + 90) for run_id in run_ids
        }
        time.sleep(2)  # anything still in flight lands
        got = receiver.received("/killed")
    finally:
        receiver.close()
    assert {run["status"] for run in final.values()} == {"success"}, final
    calls: dict[str, int] = {}
    for request in got:
        Webhook(ep["secret"]).verify(request.body, request.headers)
        calls[request.headers["webhook-id"]] = calls.get(request.headers["webhook-id"], 0) + 1
    assert calls == {run_id: 2 for run_id in run_ids}, calls  # the lost call, then the one that answered
    assert all(r.at > killed_at for r in got[BATCH:])
    for run_id in run_ids:
        history = api.all_pages(f"/v1/task-runs/{run_id}/attempts")
        shape = [(a["attempt_number"], a["status_code"], a["error_kind"]) for a in history]
        assert shape == [(1, None, "worker_lost"), (2, 200, None)], (run_id, history)
        assert final[run_id]["attempt_count"] == 2
    print(
        f"\nkilled with {BATCH} deliveries in flight; after the restart each run succeeded with "
        f"{len(got) // BATCH} HTTP calls and the same number of Attempts (the first: worker_lost)"
    )
