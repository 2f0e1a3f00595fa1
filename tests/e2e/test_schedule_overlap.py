"""Jitter and overlap policies end to end on the local stack, with real receivers on loopback:
every-second schedules with jitter are delivered at their fires' due times, spread over the window;
under SKIP a slow receiver never sees two fires of one schedule at once, and the fires due while
one is open are recorded SKIPPED."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from edgecron_testing.api import Api
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver, Reply


def _settled_fires(api: Api, schedule_id: str, timeout: float = 15.0) -> list[dict[str, Any]]:
    """The schedule's Fires once none is open any more (a paused schedule's last one finishes)."""
    deadline = time.time() + timeout
    while True:
        fires: list[dict[str, Any]] = api.all_pages(f"/v1/schedules/{schedule_id}/fires")
        if (
            all(f["status"] not in ("SCHEDULED", "RUNNING", "BUFFERED") for f in fires)
            or time.time() > deadline
        ):
            return fires
        time.sleep(0.2)


def _at(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_jitter_spreads_every_second_fires_and_each_is_delivered_at_its_due_time(
    local_stack: LocalStackProcess,
) -> None:
    api = Api(local_stack.api_url, local_stack.api_key)
    receiver = Receiver()
    schedules: list[str] = []
    try:
        ep = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/jitter")})
        for _ in range(3):
            s = api.ok(
                "POST", "/v1/schedules", {"cron": "* * * * * *", "endpoint_ids": [ep["id"]], "jitter_sec": 2}
            )
            schedules.append(s["id"])
        receiver.wait_for("/jitter", 15, timeout=20)
    finally:
        for schedule_id in schedules:
            api.ok("POST", f"/v1/schedules/{schedule_id}/pause")
        receiver.close()
    due: dict[str, tuple[float, float]] = {}
    for schedule_id in schedules:
        for fire in api.all_pages(f"/v1/schedules/{schedule_id}/fires"):
            for run in fire["runs"]:
                due[run["id"]] = (_at(fire["fire_time"]), _at(fire["due_at"]))
    offsets = [d - f for f, d in due.values()]
    assert all(0 <= o < 2 for o in offsets)
    assert len({round(o, 3) for o in offsets}) > len(offsets) // 2  # spread, not one shared second
    arrived = [(r.headers["webhook-id"], r.at) for r in receiver.received("/jitter")]
    assert len(arrived) >= 15
    for run_id, at in arrived:
        assert at >= due[run_id][1] - 0.05, "delivered before its due time"


def test_skip_never_overlaps_a_slow_receiver_and_records_the_skipped_fires(
    local_stack: LocalStackProcess,
) -> None:
    api = Api(local_stack.api_url, local_stack.api_key)
    receiver = Receiver()
    receiver.script("/slow", Reply(200, delay_sec=3.5))
    schedule_id = ""
    try:
        ep = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/slow"), "timeout_ms": 10_000})
        schedule_id = api.ok(
            "POST",
            "/v1/schedules",
            {"cron": "* * * * * *", "endpoint_ids": [ep["id"]], "overlap_policy": "SKIP"},
        )["id"]
        receiver.wait_for("/slow", 3, timeout=20)
    finally:
        if schedule_id:
            api.ok("POST", f"/v1/schedules/{schedule_id}/pause")
    fires = _settled_fires(api, schedule_id)  # the delivery in flight at the pause finishes
    receiver.close()
    assert receiver.max_in_flight("/slow") == 1
    by_status: dict[str, int] = {}
    for fire in fires:
        by_status[fire["status"]] = by_status.get(fire["status"], 0) + 1
    assert by_status.get("COMPLETED", 0) >= 3
    assert by_status.get("SKIPPED", 0) >= 2 * by_status["COMPLETED"] - 2  # ~3 skipped per 3.5 s delivery
    assert all(not f["runs"] for f in fires if f["status"] == "SKIPPED")
    got = api.ok("GET", f"/v1/schedules/{schedule_id}")
    assert got["consecutive_failures"] == 0
