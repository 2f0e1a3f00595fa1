"""Bulk routes (delivery stats, bulk dead-letter replay, Endpoint recover) do bounded work per call:
with 10,000 runs stored, each call answers well inside the API function's timeout, and calls that
follow `next_cursor` reach every matching run exactly once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from edgecron import clock
from edgecron.data.keys import run_partition
from edgecron.data.models import TaskRunModel
from edgecron.data.runs import created_key
from edgecron_cli.local import moto_server
from edgecron_testing.aws_fidelity import IndexTime
from edgecron_testing.harness import call_api, timeout_sec
from tests.integration.conftest import Pump, new_app

T0 = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)
pytestmark = pytest.mark.slow  # most of it is moto reading a 10,000-item index

STORED = 10_000
MATCHING_EVERY = 100  # one stored run in 100 is the recovered Endpoint's, one in 100 the replayed one's
CLOSED = "http://127.0.0.1:9/x"  # nothing listens: every attempt fails at once


def endpoint(key: str) -> str:
    policy = call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 1}).body["id"]
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": CLOSED, "retry_policy_id": policy})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def dead_letter(key: str, endpoint_id: str, pump: Pump) -> TaskRunModel:
    created = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id}).body
    pump.deliveries()
    assert call_api("GET", f"/v1/task-runs/{created['id']}", key=key).body["status"] == "dead_letter"
    (run,) = [r for r in TaskRunModel.scan(TaskRunModel.run_id == created["id"])]
    return run


def store_copies(template: dict[TaskRunModel, list[int]], start_ms: int) -> None:
    """Copies of real dead letters, one per millisecond from `start_ms`: `template` maps each real run
    to the positions its copies take. Put straight into moto's table (a batch write per 25 items
    through the API would be most of the test's time): only what a bulk route reads."""
    items = []
    for run, positions in template.items():
        raw = run.serialize()
        for i in positions:
            run_id = f"{run.run_id[:-6]}{i:06d}"
            at = start_ms + i
            items.append(
                {
                    **raw,
                    "run_id": {"S": run_id},
                    "app_part": {"S": run_partition(run.app_id, run_id)},
                    "created_at": {"N": str(at)},
                    "finished_at": {"N": str(at)},
                    "dead_key": {"S": created_key(at, run_id)},
                }
            )
    moto_server.put_items(TaskRunModel.Meta.table_name, items)


@pytest.fixture
def stored(pump: Pump, index_time: IndexTime) -> Iterator[tuple[str, str, str]]:
    """An App key with 10,000 dead letters: one in 100 of Endpoint `mine`, one in 100 of `yours`,
    the rest of a third Endpoint."""
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    _, key = new_app("bulk")
    mine, yours, theirs = endpoint(key), endpoint(key), endpoint(key)
    runs: dict[TaskRunModel, list[int]] = {dead_letter(key, e, pump): [] for e in (mine, yours, theirs)}
    first, second, rest = list(runs)
    for i in range(STORED):
        runs[first if i % MATCHING_EVERY == 0 else second if i % MATCHING_EVERY == 1 else rest].append(i)
    fixed.advance(60)
    store_copies(runs, clock.to_ms(fixed.now()) - STORED)
    index_time.settle()
    yield key, mine, yours


def timed(method: str, path: str, key: str, body: dict[str, Any] | None = None) -> tuple[Any, float]:
    started = time.monotonic()
    resp = call_api(method, path, key=key, body=body)
    return resp, time.monotonic() - started


def well_inside_the_timeout(seconds: float) -> bool:
    return seconds < timeout_sec("api") / 3


def test_bulk_routes_stay_inside_the_timeout_and_reach_every_run_once(stored: tuple[str, str, str]) -> None:
    key, mine, yours = stored
    stats, took = timed("GET", "/v1/stats/deliveries", key)
    assert stats.status == 200 and well_inside_the_timeout(took), (stats.status, took)

    recovered, calls, cursor = 0, 0, None
    while True:
        body = {"since": "2026-12-01T08:00:00Z", **({"cursor": cursor} if cursor else {})}
        resp, took = timed("POST", f"/v1/endpoints/{mine}/recover", key, body)
        assert resp.status == 200 and well_inside_the_timeout(took), (resp.body, took)
        recovered, calls = recovered + resp.body["recovered"], calls + 1
        cursor = resp.body["next_cursor"]
        if not resp.body["has_more"]:
            assert cursor is None
            break
    assert recovered == STORED // MATCHING_EVERY + 1  # the copies and the run they were copied from

    replayed, skipped, calls, cursor = 0, 0, 0, None
    while True:
        body = {"endpoint_id": yours, "limit": 60, **({"cursor": cursor} if cursor else {})}
        resp, took = timed("POST", "/v1/dead-letters/replay", key, body)
        assert resp.status == 200 and well_inside_the_timeout(took), (resp.body, took)
        assert resp.body["replayed"] + resp.body["skipped"] <= 60
        replayed, skipped, calls = replayed + resp.body["replayed"], skipped + resp.body["skipped"], calls + 1
        cursor = resp.body["next_cursor"]
        if not resp.body["has_more"]:
            break
    assert (replayed, skipped) == (STORED // MATCHING_EVERY + 1, 0)
    assert calls >= 2  # the limit
    left = call_api("GET", "/v1/dead-letters", key=key, query={"endpoint_id": yours}).body
    assert left["data"] == [] and left["next_cursor"] is None
