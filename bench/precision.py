"""Benchmark 2: fire precision on the local stack.

Every-second schedules run for a while against a loopback receiver; each request's lag is its arrival
time minus the nominal fire time of the Fire that sent it. The fire time is recovered from the
`webhook-id` header, which is the Task Run id: a Fire's runs have deterministic ids
(`dispatch.run_id_for(schedule, fire time, endpoint)`), so each id maps back to exactly one
(schedule, fire time). Fires due less than WARMUP_S after their schedule's create returned are also
reported apart: the create dispatches its first three fires before it answers and hands the rest of the
look-ahead window to the fan-out function, so the first seconds after a create are the busiest.

A schedule's fires are those after the time its create stored (`created_at`), not after the request
was sent. A fire due before its schedule's pause that had not been delivered when it was cancelled, once the
pause was asked for, counts as a lag of at least the time from its fire to its cancel (its true lag
is longer); only a fire neither delivered nor cancelled after the pause is missing."""

from __future__ import annotations

import math
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from bench.report import Row, verdict

TARGET_P99_S = 1.0
WARMUP_S = 5.0
SETTLE_S = 3.0  # after pausing, wait this long for requests already in flight
RATE_FROM_S = 10.0  # the delivered rate is counted from this long after the first create to the pause
MAX_FIRES = 100_000


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summary(lags: list[float]) -> dict[str, Any]:
    if not lags:
        return {"count": 0}
    return {
        "count": len(lags),
        "p50_ms": round(statistics.median(lags) * 1000),
        "p99_ms": round(percentile(lags, 0.99) * 1000),
        "max_ms": round(max(lags) * 1000),
        "min_ms": round(min(lags) * 1000),
    }


def run(
    stack: Any, *, duration_s: float, schedule_counts: tuple[int, ...], cron: str
) -> tuple[list[Row], dict[str, Any]]:
    """One measurement per schedule count, on the same stack, smallest first: a load the stack cannot
    carry leaves a backlog of cancelled runs behind that would delay whatever runs next."""
    rows: list[Row] = []
    runs = []
    for count in sorted(schedule_counts):
        got_rows, data = measure(stack, duration_s=duration_s, schedules=count, cron=cron)
        rows += got_rows
        runs.append(data)
    return rows, {"target_p99_ms": TARGET_P99_S * 1000, "warmup_s": WARMUP_S, "runs": runs}


def patient_api(base_url: str, key: str) -> Any:
    """edgecron_testing.api.Api with a 300 s timeout: a create on a loaded local stack (other benchmarks,
    other processes on the machine) can take longer than Api's 30 s."""
    from edgecron_testing.api import Api

    class PatientApi(Api):
        def call(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
            url = self.base_url + path
            return self.session.request(method, url, json=body, params=params or None, timeout=300)

    return PatientApi(base_url, key)


def measure(stack: Any, *, duration_s: float, schedules: int, cron: str) -> tuple[list[Row], dict[str, Any]]:
    from edgecron.domain.cron import fires_between, parse_cron
    from edgecron.services.fires.dispatch import run_id_for
    from edgecron_testing.receiver import Receiver

    receiver = Receiver()
    path = "/precision"
    created: list[tuple[str, float, float]] = []  # schedule id, create sent, create answered
    stored_at: dict[str, datetime] = {}  # schedule id -> the created_at its create stored
    paused: dict[str, float] = {}  # schedule id -> pause answered
    pause_sent: dict[str, float] = {}
    api = patient_api(stack.api_url, stack.api_key)
    try:
        endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url(path)})
        begin = time.time()
        for i in range(schedules):
            sent = time.time()
            body = {"cron": cron, "endpoint_ids": [endpoint["id"]], "payload": {"schedule": i}}
            schedule = api.ok("POST", "/v1/schedules", body)
            created.append((schedule["id"], sent, time.time()))
            stored_at[schedule["id"]] = datetime.fromisoformat(str(schedule["created_at"]))
        time.sleep(max(0.0, begin + duration_s - time.time()))
        for schedule_id, _, _ in created:
            pause_sent[schedule_id] = time.time()
            api.ok("POST", f"/v1/schedules/{schedule_id}/pause")
            paused[schedule_id] = time.time()
        time.sleep(SETTLE_S)
        arrivals = receiver.received(path)
    finally:
        receiver.close()

    spec = parse_cron(cron, "UTC")
    fire_of: dict[str, tuple[str, int, float]] = {}  # run id -> schedule, fire second, create answered
    expected: set[tuple[str, int]] = set()
    for schedule_id, _, answered in created:
        start = stored_at[schedule_id]  # its first fire is the first after its create
        for fire in fires_between(
            spec, start, datetime.fromtimestamp(paused[schedule_id] + 80, UTC), MAX_FIRES
        ):
            second = int(fire.timestamp())
            fire_of[run_id_for(schedule_id, second * 1000, endpoint["id"])] = (schedule_id, second, answered)
            if second < paused[schedule_id] - 1:  # due a second before its pause: should have arrived
                expected.add((schedule_id, second))
    lags: list[float] = []
    steady: list[float] = []
    timeline: list[tuple[float, float]] = []
    seen: dict[tuple[str, int], int] = {}
    unknown = 0
    for request in arrivals:
        match = fire_of.get(request.headers.get("webhook-id", ""))
        if match is None:
            unknown += 1
            continue
        schedule_id, second, answered = match
        seen[(schedule_id, second)] = seen.get((schedule_id, second), 0) + 1
        lag = request.at - second
        lags.append(lag)
        timeline.append((second - begin, lag))
        if second >= answered + WARMUP_S:
            steady.append(lag)
    rate = delivered_rate(arrivals, fire_of, begin + RATE_FROM_S, min(paused.values(), default=begin))
    due_per_s = sum(
        1 for schedule_id, second in expected if begin + RATE_FROM_S <= second < min(paused.values())
    )
    due_span = min(paused.values(), default=begin) - begin - RATE_FROM_S
    run_of = {(sid, second): run_id for run_id, (sid, second, _) in fire_of.items()}
    undelivered = {fire: _run_state(api, run_of[fire]) for fire in sorted(expected - set(seen))}
    cancelled_by_pause, missing_fires = undelivered_fates(undelivered, pause_sent)
    for (sid, second), at_least in cancelled_by_pause.items():
        lags.append(at_least)
        if second >= fire_of[run_of[(sid, second)]][2] + WARMUP_S:
            steady.append(at_least)
    missing = len(missing_fires)
    duplicates = sum(n - 1 for n in seen.values() if n > 1)
    overall, warm = summary(lags), summary(steady)
    creates = [answered - sent for _, sent, answered in created]
    data = {
        "schedules": schedules,
        "cron": cron,
        "duration_s": duration_s,
        "all_fires": overall,
        "after_warmup": warm,
        "deliveries": len(lags),
        "fires_due_before_pause": len(expected),
        "fires_missing": missing,
        "missing_fires": missing_fires[:MISSING_SHOWN],
        "cancelled_by_the_pause": len(cancelled_by_pause),
        "duplicates": duplicates,
        "unknown_requests": unknown,
        # fires delivered per second of wall time (from RATE_FROM_S after the first create to the first
        # pause) beside the fires due per second then: below the due rate, it is the stack's capacity
        "delivered_fires_per_s": round(rate, 2),
        "due_fires_per_s": round(due_per_s / due_span, 2) if due_span > 0 else None,
        "create_request_s": {"mean": round(statistics.mean(creates), 2), "max": round(max(creates), 2)}
        if creates
        else {},
        "lag_by_fire_time": _timeline(timeline),
    }
    label = f"{schedules} schedule{'s' if schedules != 1 else ''} '{cron}', {duration_s:.0f} s"
    target = f"p99 <= {TARGET_P99_S * 1000:.0f} ms"
    rows = [
        Row(
            "precision",
            f"{label}, all fires",
            _fmt(overall, missing, duplicates, len(cancelled_by_pause))
            + (f"; {rate:.1f} fires/s delivered of {due_per_s / due_span:.0f} due" if due_span > 0 else ""),
            target,
            verdict(
                bool(lags) and overall["p99_ms"] <= TARGET_P99_S * 1000 and not duplicates and not missing
            ),
        ),
        Row(
            "precision",
            f"{label}, fires >= {WARMUP_S:.0f} s after the create",
            _fmt(warm, None, None),
            target,
            verdict(warm["p99_ms"] <= TARGET_P99_S * 1000) if steady else "n/a",
        ),
    ]
    return rows, data


MISSING_SHOWN = 20  # missing fires described in results.json


def undelivered_fates(
    undelivered: dict[tuple[str, int], dict[str, Any]], pause_sent: dict[str, float]
) -> tuple[dict[tuple[str, int], float], list[dict[str, Any]]]:
    """Of the fires due before their pause that never arrived (each with its run's state): those
    cancelled once their schedule's pause was asked for (by the pause itself, or by the scan, a fan-out
    or a worker that found the schedule paused), with the lag they had reached when cancelled (their
    true lag is longer), and those missing (no run, or a run that ended any other way), described."""
    cancelled: dict[tuple[str, int], float] = {}
    missing: list[dict[str, Any]] = []
    for (schedule_id, second), state in sorted(undelivered.items()):
        finished = state.get("finished_at")
        ended = datetime.fromisoformat(finished).timestamp() if isinstance(finished, str) else None
        if state.get("status") == "cancelled" and ended is not None and ended >= pause_sent[schedule_id]:
            cancelled[(schedule_id, second)] = ended - second
        else:
            missing.append({"before_pause_s": round(pause_sent[schedule_id] - second, 2), "run": state})
    return cancelled, missing


def _run_state(api: Any, run_id: str) -> dict[str, Any]:
    resp = api.session.get(f"{api.base_url}/v1/task-runs/{run_id}", timeout=30)
    if resp.status_code != 200:
        return {"http_status": resp.status_code}
    run = resp.json()
    return {
        k: run.get(k)
        for k in ("status", "attempt_count", "last_error", "deliver_at", "created_at", "finished_at")
    }


def delivered_rate(arrivals: list[Any], fire_of: dict[str, Any], start: float, end: float) -> float:
    """Requests of known fires that arrived between `start` and `end` (Unix s), per second."""
    if end <= start:
        return 0.0
    count = sum(1 for r in arrivals if r.headers.get("webhook-id", "") in fire_of and start <= r.at < end)
    return count / (end - start)


def _fmt(s: dict[str, Any], missing: int | None, duplicates: int | None, cancelled: int = 0) -> str:
    if not s.get("count"):
        return "no deliveries"
    text = f"p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms, max {s['max_ms']} ms ({s['count']} fires"
    if missing is not None:
        text += f", {missing} missing, {duplicates} duplicates"
        if cancelled:
            text += f", {cancelled} still waiting when the pause cancelled them, counted at that lag"
    return text + ")"


def _timeline(points: list[tuple[float, float]]) -> list[dict[str, float]]:
    """p50 and max lag per 10 s of fire time (from the first create): a growing lag is a backlog, a
    saw-tooth is the dispatch loop's own duration."""
    buckets: dict[int, list[float]] = {}
    for at, lag in points:
        buckets.setdefault(int(at // 10), []).append(lag)
    return [
        {
            "from_s": k * 10,
            "count": len(v),
            "p50_ms": round(statistics.median(v) * 1000),
            "max_ms": round(max(v) * 1000),
        }
        for k, v in sorted(buckets.items())
    ]
