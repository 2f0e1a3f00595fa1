"""Self-healing on the local stack: a two-minute stop of the whole stack with an every-30-seconds
schedule yields MISSED Fires and exactly one catch-up delivery (RUN_ONCE); purging the delivery queue
mid-run loses no run (DynamoDB is the source of truth)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver

OUTAGE_SEC = float(os.environ.get("EDGECRON_E2E_OUTAGE_SEC", "120"))


@pytest.fixture(scope="module")
def own_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStackProcess]:
    """A stack of this module's own: stopping it must not disturb the other e2e tests."""
    os.environ["EDGECRON_LOCAL_REDISPATCH_AFTER_SEC"] = "10"
    try:
        stack = LocalStackProcess(tmp_path_factory.mktemp("catchup-stack"), "2")
        stack.start()
    finally:
        del os.environ["EDGECRON_LOCAL_REDISPATCH_AFTER_SEC"]
    yield stack
    assert stack.stop() == 0


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_two_minute_stop_records_missed_fires_and_runs_once(
    own_stack: LocalStackProcess, receiver: Receiver
) -> None:
    api = Api(own_stack.api_url, own_stack.api_key)
    ep = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/every30")})
    schedule = api.ok(
        "POST",
        "/v1/schedules",
        {"cron": "*/30 * * * * *", "endpoint_ids": [ep["id"]], "missed_policy": "RUN_ONCE"},
    )
    assert own_stack.stop() == 0
    stopped_at = time.time()
    time.sleep(OUTAGE_SEC)
    launched_at = time.time()
    own_stack.start()
    restarted_at = time.time()
    # the compensation ran at start: wait until the catch-up run it made has ended
    outage = _outage_fires(api, schedule["id"], stopped_at, restarted_at)
    for run_id in {run["id"] for f in outage if f["status"] != "MISSED" for run in f["runs"]}:
        api.wait_run(run_id, terminal, timeout=60)
    outage = _outage_fires(api, schedule["id"], stopped_at, restarted_at)
    missed = [f["fire_time"] for f in outage if f["status"] == "MISSED"]
    ran = [f["fire_time"] for f in outage if f["status"] != "MISSED"]
    arrivals = [r for r in receiver.received("/every30") if r.at >= restarted_at - 1]
    print(
        f"\noutage {OUTAGE_SEC:.0f} s: {len(outage)} fire times, MISSED {missed}, ran {ran}, "
        f"{len(arrivals)} deliveries after the restart before the next regular fire"
    )
    assert len(missed) >= max(1, int(OUTAGE_SEC // 30) - 2)  # every 30 s, minus the edges
    # RUN_ONCE: only the most recent fire time before the catch-up runs, every earlier one is MISSED; a
    # fire time that came due while the stack was starting, after the catch-up, is dispatched as usual
    assert 1 <= len(ran) <= 2 and max(missed) < min(ran), (missed, ran)
    assert len(ran) == 1 or _ts(ran[-1]) >= launched_at, (ran, launched_at)
    ran_run_ids = {run["id"] for f in outage if f["status"] != "MISSED" for run in f["runs"]}
    assert ran_run_ids & {a.headers["webhook-id"] for a in arrivals}  # the catch-up delivery arrived
    run_ids = {a.headers["webhook-id"] for a in arrivals}
    assert len(run_ids) == len(arrivals)  # nothing delivered twice


def _outage_fires(api: Api, schedule_id: str, stopped_at: float, restarted_at: float) -> list[dict[str, Any]]:
    """The schedule's Fires whose fire time fell in the outage, oldest first, once every one of them
    is recorded (MISSED, or dispatched with its run), waiting up to a minute for that."""
    deadline = time.monotonic() + 60
    while True:
        fires = api.all_pages(f"/v1/schedules/{schedule_id}/fires")
        outage = sorted(
            (f for f in fires if stopped_at <= _ts(f["fire_time"]) < restarted_at),
            key=lambda f: f["fire_time"],
        )
        settled = all(f["status"] == "MISSED" or f["runs"] for f in outage)
        if (outage and settled) or time.monotonic() > deadline:
            return outage
        time.sleep(0.5)


def _ts(value: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def test_purging_the_delivery_queue_loses_no_run(own_stack: LocalStackProcess, receiver: Receiver) -> None:
    api = Api(own_stack.api_url, own_stack.api_key)
    ep = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/purged")})
    runs = [api.ok("POST", "/v1/task-runs", {"endpoint_id": ep["id"], "delay_sec": 3}) for _ in range(5)]
    sqs = boto3.client(
        "sqs",
        endpoint_url=own_stack.aws_endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    url = next(u for u in sqs.list_queues()["QueueUrls"] if u.endswith("DeliveryQueue"))
    sqs.purge_queue(QueueUrl=url)
    finals = [api.wait_run(r["id"], terminal, timeout=40) for r in runs]
    assert {f["status"] for f in finals} == {"success"}
    assert sorted(r.headers["webhook-id"] for r in receiver.received("/purged")) == sorted(
        r["id"] for r in runs
    )
