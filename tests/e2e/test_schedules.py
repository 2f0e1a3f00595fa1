"""Schedules end to end on the local stack: an every-second schedule delivers exactly one signed
request per fire time, on time."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from datetime import datetime

from standardwebhooks.webhooks import Webhook

from edgecron_testing.api import Api
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver


def test_every_second_schedule_one_request_per_fire_time(local_stack: LocalStackProcess) -> None:
    api = Api(local_stack.api_url, local_stack.api_key)
    receiver = Receiver()
    try:
        ep = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/tick")})
        schedule = api.ok(
            "POST",
            "/v1/schedules",
            {"cron": "* * * * * *", "endpoint_ids": [ep["id"]], "payload": {"job": "tick"}},
        )
        time.sleep(10.5)
        api.ok("POST", f"/v1/schedules/{schedule['id']}/pause")
        time.sleep(1.5)  # anything already in flight lands
        got = receiver.received("/tick")
    finally:
        receiver.close()
    fires = api.all_pages(f"/v1/schedules/{schedule['id']}/fires")
    delivered = {f["fire_time"]: f for f in fires if f["status"] == "COMPLETED"}
    run_ids = [g.headers["webhook-id"] for g in got]
    assert len(run_ids) == len(set(run_ids)), Counter(run_ids).most_common(3)  # no fire delivered twice
    assert len(got) >= 9, len(got)
    for request in got:
        Webhook(ep["secret"]).verify(request.body, request.headers)
    fire_of_run = {run["id"]: f["fire_time"] for f in fires for run in f["runs"]}
    lags = []
    for request in got:
        fire_time = datetime.fromisoformat(fire_of_run[request.headers["webhook-id"]].replace("Z", "+00:00"))
        lags.append(request.at - fire_time.timestamp())
    assert len(delivered) >= len(got) - 1  # each delivery settled its Fire (the last may still settle)
    lags.sort()
    p50 = statistics.median(lags)
    p99 = lags[min(len(lags) - 1, round(0.99 * (len(lags) - 1)))]
    print(
        f"\nevery-second schedule: {len(got)} deliveries, lag p50 {p50 * 1000:.0f} ms, "
        f"p99 {p99 * 1000:.0f} ms, max {lags[-1] * 1000:.0f} ms"
    )
    assert all(lag > -0.05 for lag in lags), lags  # never early
