"""Benchmark 5: batch concurrency (in-process) and sustained throughput (local stack).

Batch: ten delivery messages, handed to one worker invocation, to a receiver that answers after 1 s.
If the batch's records run concurrently the invocation takes about 1 s plus the AWS calls; serially,
at least 10 s. The arrival spread at the receiver (first to last request) shows it directly.

Throughput: direct runs created over the local stack's HTTP API as fast as four client threads go,
measured from the first create to the last arrival at a loopback receiver, beside a plain `requests`
loop posting the same body to the same receiver (the ceiling of this machine)."""

from __future__ import annotations

import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.inproc import Env
from bench.report import Row, verdict

PAYLOAD = {"kind": "bench", "text": "x" * 200}
CLIENT_THREADS = 4  # the local stack runs four API containers
TARGET_RATIO = 0.12  # the local stack's deliveries/s over the plain loop's, measured in one run


def batch_concurrency(env: Env, *, size: int = 10, delay_s: float = 1.0) -> tuple[list[Row], dict[str, Any]]:
    from edgecron_testing.harness import sqs_event
    from edgecron_testing.receiver import Receiver, Reply

    receiver = Receiver()
    path = "/slow"
    receiver.script(path, Reply(200, delay_sec=delay_s))
    try:
        _, key = env.new_app("bench-batch")
        ep = env.api("POST", "/v1/endpoints", key=key, body={"url": receiver.url(path)}).body["id"]
        env.reset()
        for i in range(size):
            env.api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep, "payload": {"n": i}})
        info = env.queue("DeliveryQueue")
        import boto3

        sqs = boto3.session.Session().client("sqs", region_name="us-east-1")
        messages: list[dict[str, Any]] = []
        deadline = time.monotonic() + 10
        while len(messages) < size and time.monotonic() < deadline:
            got = sqs.receive_message(
                QueueUrl=info.url,
                MaxNumberOfMessages=min(10, size - len(messages)),
                AttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
            )
            messages.extend(got.get("Messages", []))
        with env.window() as usage:
            started = time.perf_counter()
            env.invoke("worker", sqs_event(messages, info.arn), records=len(messages))
            wall = time.perf_counter() - started
        arrivals = [r.at for r in receiver.received(path)]
    finally:
        receiver.close()
        env.reset()
    invocation = usage.invocations[0]
    spread = (max(arrivals) - min(arrivals)) if arrivals else float("nan")
    in_flight = max_in_flight(arrivals, delay_s)
    data = {
        "records": len(messages),
        "receiver_delay_s": delay_s,
        "wall_s": round(wall, 3),
        "serial_lower_bound_s": size * delay_s,
        "arrival_spread_ms": round(spread * 1000, 1),
        "arrivals_ms": [round((a - min(arrivals)) * 1000) for a in sorted(arrivals)],
        "max_in_flight": in_flight,
        "delivered": len(arrivals),
        "aws_calls": invocation.aws_calls,
        "aws_time_s_moto": round(invocation.aws_s, 3),
    }
    row = Row(
        "batch",
        f"{len(messages)} records, receiver answers after {delay_s:.0f} s",
        f"{wall:.2f} s wall (serial >= {size * delay_s:.0f} s); at most {in_flight} of {len(arrivals)} requests in flight at once",
        "~1 s, all concurrent",
        verdict(in_flight == size and len(arrivals) == size),
    )
    return [row], data


def max_in_flight(starts: list[float], duration_s: float) -> int:
    """The most requests the receiver held at once, each held `duration_s` from its arrival."""
    return max((sum(1 for s in starts if s <= t < s + duration_s) for t in starts), default=0)


def stack_throughput(stack: Any, *, runs: int) -> tuple[list[Row], dict[str, Any]]:
    import requests

    from edgecron_testing.api import Api
    from edgecron_testing.receiver import Receiver

    receiver = Receiver()
    path = "/throughput"
    try:
        fresh_s = _plain_loop(receiver, runs, requests)  # a new connection per request
        keep_alive_s = _plain_loop(receiver, runs, requests.Session())
        api = Api(stack.api_url, stack.api_key)
        ep = api.ok("POST", "/v1/endpoints", {"url": receiver.url(path)})["id"]
        api.ok("POST", "/v1/task-runs", {"endpoint_id": ep, "payload": PAYLOAD})  # warm the containers
        receiver.wait_for(path, 1, timeout=30)
        start = time.time()
        cpu_before = process_cpu_s(stack.pid)
        clients = [Api(stack.api_url, stack.api_key) for _ in range(CLIENT_THREADS)]

        def create(i: int) -> None:
            clients[i % CLIENT_THREADS].ok("POST", "/v1/task-runs", {"endpoint_id": ep, "payload": PAYLOAD})

        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(create, range(runs)))
        created = time.time()
        got = receiver.wait_for(path, runs + 1, timeout=max(120.0, runs * 2.0))
        cpu_after = process_cpu_s(stack.pid)
    finally:
        receiver.close()
    arrivals = sorted(r.at for r in got if r.at >= start)
    elapsed = (arrivals[-1] - start) if arrivals else float("nan")
    rate = len(arrivals) / elapsed if arrivals else 0.0
    ceiling = runs / min(fresh_s, keep_alive_s)
    lag = [a - start for a in arrivals]
    cpu_ms = {
        name: round((cpu_after[name] - cpu_before[name]) * 1000 / len(arrivals), 2)
        for name in cpu_before
        if arrivals and name in cpu_after
    }
    data = {
        "runs": runs,
        "delivered": len(arrivals),
        "create_phase_s": round(created - start, 2),
        "first_create_to_last_arrival_s": round(elapsed, 2),
        "deliveries_per_s": round(rate, 2),
        "creates_per_s": round(runs / (created - start), 2),
        "plain_requests_loop_per_s": round(ceiling, 1),
        "plain_loop_new_connection_per_s": round(runs / fresh_s, 1),
        "plain_loop_keep_alive_per_s": round(runs / keep_alive_s, 1),
        "ratio": round(rate / ceiling, 4),
        "median_arrival_after_start_s": round(statistics.median(lag), 2) if lag else None,
        "client_threads": CLIENT_THREADS,
        "cpu_ms_per_delivery": cpu_ms,
    }
    row = Row(
        "throughput",
        f"local stack, {runs} direct runs",
        f"{rate:.1f} deliveries/s vs plain requests loop {ceiling:.0f}/s (ratio {rate / ceiling:.3f})"
        + _cpu_text(cpu_ms),
        f">= {TARGET_RATIO}",
        verdict(rate / ceiling >= TARGET_RATIO) if len(arrivals) == runs else "INCOMPLETE",
    )
    return [row], data


CHILD_NAMES = {"moto_process": "moto", "consumers_process": "consumers"}


def process_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) used so far by the stack's process and each of its children (moto's,
    the queue consumers', named by their module; any other as "other"); empty where /proc cannot be read.
    Per delivery, it shows which process a change made cheaper."""
    tick = os.sysconf("SC_CLK_TCK")

    def used(process: int) -> float:
        fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick  # utime, stime

    def name(process: int) -> str:
        command = Path(f"/proc/{process}/cmdline").read_bytes().decode(errors="replace")
        return next((label for module, label in CHILD_NAMES.items() if module in command), "other")

    try:
        children = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        found = {"stack": used(pid)}
        for child in children:
            label = name(child)
            found[label] = found.get(label, 0.0) + used(child)
        return found
    except (OSError, ValueError, IndexError):
        return {}


def _cpu_text(per_delivery: dict[str, float]) -> str:
    if not per_delivery:
        return ""
    return "; CPU per delivery " + ", ".join(f"{name} {ms:.1f} ms" for name, ms in per_delivery.items())


def _plain_loop(receiver: Any, runs: int, session: Any) -> float:
    """Seconds for `runs` sequential POSTs of the same body to the same receiver. Both a new connection
    per request and a keep-alive session are timed: edgecron_testing/receiver.py writes the status line and
    headers and the body in separate sends, so a keep-alive client waits for a delayed ACK (~40 ms) on
    every request; the faster of the two is the ceiling."""
    url = receiver.url("/ceiling")
    started = time.perf_counter()
    for _ in range(runs):
        session.post(url, json=PAYLOAD, timeout=10).raise_for_status()
    return time.perf_counter() - started
