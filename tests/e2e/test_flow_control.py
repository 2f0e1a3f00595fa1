"""Flow control end to end on the local stack: a burst of runs to an Endpoint with `max_per_sec` and
`max_in_flight` reaches a real receiver on 127.0.0.1 no faster than the rate and never more than the
in-flight limit at once, each run once, none failed, one attempt each."""

from __future__ import annotations

from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver, Reply

RATE = 4  # a second
IN_FLIGHT = 2
RUNS = 12
JITTER_SEC = 0.15  # how late a worker may start a request after its slot on a busy machine


def test_a_burst_arrives_at_the_rate_and_within_the_in_flight_limit(
    local_stack: LocalStackProcess, receiver: Receiver
) -> None:
    api = Api(local_stack.api_url, local_stack.api_key)
    receiver.script("/erp", Reply(delay_sec=0.7))  # slow: at the rate, three would overlap
    ep = api.ok(
        "POST",
        "/v1/endpoints",
        {"url": receiver.url("/erp"), "max_per_sec": RATE, "max_in_flight": IN_FLIGHT},
    )
    assert (ep["max_per_sec"], ep["max_in_flight"]) == (RATE, IN_FLIGHT)
    run_ids = [
        api.ok("POST", "/v1/task-runs", {"endpoint_id": ep["id"], "payload": {"n": i}})["id"]
        for i in range(RUNS)
    ]
    runs = [api.wait_run(run_id, terminal, timeout=30) for run_id in run_ids]
    assert {(r["status"], r["attempt_count"]) for r in runs} == {("success", 1)}
    arrivals = receiver.received("/erp")
    assert sorted(r.headers["webhook-id"] for r in arrivals) == sorted(run_ids)  # each once
    assert receiver.max_in_flight("/erp") == IN_FLIGHT
    times = sorted(r.at for r in arrivals)
    # the burst is spread at the rate: twelve at four a second take at least 2.75 s ...
    assert times[-1] - times[0] >= (RUNS - 1) / RATE - JITTER_SEC
    # ... and no second holds more than the rate (one more when a late start meets the next slot)
    for start in times:
        assert sum(start <= t < start + 1 - JITTER_SEC for t in times) <= RATE
