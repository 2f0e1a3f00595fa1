"""Function sizing: duration and cost per invocation of each function at 128/256/512/1024 MB.

A representative invocation of each function is measured in-process on moto (the cost benchmark's
scenarios: a direct burst, an event fan-out, a scheduled burst and an idle scan tick): its own CPU time
(the process's CPU time over the invocation, every thread, less what moto took inside the AWS calls;
the local receiver's replies, a fraction of a millisecond each, stay in) and its AWS calls. On AWS a
function gets CPU in proportion to its memory (one vCPU at 1,769 MB), so the CPU time is stretched by
1769 / MB below that; the AWS calls take their regional latency (prices.LATENCY_S) whatever the size,
and a delivery also waits on its receiver (RECEIVER_WAIT_S, the records of a batch at once). The
resident memory after importing each handler, in a fresh interpreter, is the floor of what it needs.
Priced at prices.PRICES (arm64); the sizes the template gives each function are read from it."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from typing import Any

from bench import cost, prices
from bench.inproc import Env
from bench.meter import Invocation
from bench.prices import PRICES, ROOT
from bench.report import Row

SIZES_MB = (128, 256, 512, 1024)
RECEIVER_WAIT_S = 0.1  # a receiver's answer, as a delivery waits on it (a fast webhook receiver)
# Provisioned concurrency (arm64) and SnapStart (Python), us-east-1 list prices.
PROVISIONED_GB_S = 0.0000033334
SNAPSTART_CACHE_GB_S = 0.0000015046
SNAPSTART_RESTORE_GB = 0.0001397998
SECONDS_PER_MONTH = 30 * 24 * 3600
MEASURED = ("api", "worker", "fanout", "scan")


def _own_cpu_s(invocation: Invocation) -> float:
    """The process's CPU time over the invocation less what moto took inside its AWS calls: the
    function's own code and botocore's, on every thread (the worker sends a batch's records at once),
    as CPU time, so a busy machine does not inflate it the way it inflates wall time."""
    return max(0.0, invocation.cpu_s - invocation.service_cpu_s)


def _aws_wait_s(invocation: Invocation) -> float:
    latency = sum(
        count * prices.LATENCY_S.get(service, prices.DEFAULT_LATENCY_S)
        for service, count in invocation.calls_by_service.items()
    )
    return latency / max(1, invocation.records)


def profile(invocations: list[Invocation], function: str) -> dict[str, float]:
    """The mean invocation of a function: CPU on one full core, waits, records, AWS calls."""
    mine = [i for i in invocations if i.function == function]
    n = max(1, len(mine))
    receiver = RECEIVER_WAIT_S if function == "worker" else 0.0
    return {
        "invocations": len(mine),
        "records": sum(i.records for i in mine) / n,
        "cpu_s": sum(_own_cpu_s(i) for i in mine) / n,
        "aws_wait_s": sum(_aws_wait_s(i) for i in mine) / n,
        "receiver_wait_s": receiver,
        "aws_calls": sum(i.aws_calls for i in mine) / n,
    }


def at_size(p: dict[str, float], memory_mb: int) -> dict[str, float]:
    """Modelled duration (ms) and cost ($) of the mean invocation at one memory size."""
    seconds = (
        p["cpu_s"] * max(1.0, prices.LAMBDA_VCPU_MB / memory_mb) + p["aws_wait_s"] + p["receiver_wait_s"]
    )
    billed_ms = math.ceil(seconds * 1000)
    usd = PRICES.lambda_request + billed_ms / 1000 * memory_mb / 1024 * PRICES.lambda_gb_s_arm64
    return {
        "duration_ms": round(seconds * 1000, 1),
        "usd_per_invocation": usd,
        "usd_per_million_records": usd * 1e6 / max(1.0, p["records"]),
    }


def resident_after_import(function: str) -> dict[str, float]:
    """Resident memory (MB) after importing the handler in a fresh interpreter (VmRSS: a forked
    process's ru_maxrss keeps its parent's peak), and the import time."""
    code = (
        "import time\nt = time.perf_counter()\nimport app\nt = time.perf_counter() - t\n"
        "rss = [line.split()[1] for line in open('/proc/self/status') if line.startswith('VmRSS:')]\n"
        "print(t, rss[0])"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "core"), str(ROOT / "functions" / function)]),
        "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    import_s, rss_kb = float(out[0]), int(out[1])
    return {"import_s": round(import_s, 3), "rss_mb": round(rss_kb / 1024, 1)}


def provisioned_usd_month(memory_mb: int, instances: int = 1) -> float:
    return instances * memory_mb / 1024 * SECONDS_PER_MONTH * PROVISIONED_GB_S


def snapstart_usd_month(memory_mb: int, restores_per_month: int) -> float:
    """One published version's snapshot cached all month, and its restores."""
    gb = memory_mb / 1024
    return gb * SECONDS_PER_MONTH * SNAPSTART_CACHE_GB_S + restores_per_month * gb * SNAPSTART_RESTORE_GB


def run(env: Env, *, runs: int) -> tuple[list[Row], dict[str, Any]]:
    from edgecron_testing.receiver import Receiver

    receiver = Receiver()
    invocations: list[Invocation] = []
    try:
        for scenario in (
            lambda: cost.direct(env, receiver, runs),
            lambda: cost.event_fanout(env, receiver, runs),
            lambda: cost.scheduled(env, receiver, runs),
        ):
            invocations += scenario().usage.invocations
        env.reset()
        with env.window() as usage:
            env.invoke("scan", {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}})
        idle_tick = usage.invocations
    finally:
        receiver.close()
        env.reset()
    configured = prices.functions()
    rows: list[Row] = []
    data: dict[str, Any] = {
        "sizes_mb": SIZES_MB,
        "receiver_wait_s": RECEIVER_WAIT_S,
        "functions": {},
    }
    profiles = {name: profile(invocations, name) for name in MEASURED}
    profiles["scan (idle tick)"] = profile(idle_tick, "scan")
    for name, p in profiles.items():
        function = name.split(" ")[0]
        sizes = {mb: at_size(p, mb) for mb in SIZES_MB}
        footprint = resident_after_import(function)
        chosen = configured[function].memory_mb
        data["functions"][name] = {
            "profile": p,
            "sizes": sizes,
            "template_mb": chosen,
            **footprint,
        }
        figure = "; ".join(
            f"{mb} MB {s['duration_ms']:.0f} ms ${s['usd_per_million_records']:.2f}/M"
            for mb, s in sizes.items()
        )
        rows.append(
            Row(
                "sizing",
                f"{name} ({p['records']:.1f} records, {p['cpu_s'] * 1000:.1f} ms CPU, "
                f"RSS {footprint['rss_mb']:.0f} MB)",
                f"{figure}; template {chosen} MB",
                "",
                "n/a",
            )
        )
    return rows, data
