"""Delivery statistics of an App (what the console's Overview draws): deliveries per time bucket,
success rate and attempt latency percentiles over the last hour or day.

Read from the App's runs (newest first, bounded) and the attempts of the most recent of them, so a
request costs the same whatever the App's history; reading also stops at a deadline, so the answer
leaves well inside the function's timeout however slow the reads are. `truncated` says when either
bound was reached."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from edgecron import clock
from edgecron.data import attempts as attempt_data
from edgecron.data import runs as run_data
from edgecron.domain.vocabulary import RunStatus
from edgecron.ids import ms_of

MAX_RUNS = 2000  # runs read per request, at most
WORK_MS = 5_000  # reads stop after this long (see api.context.bulk_deadline)
LATENCY_RUNS = 50  # runs whose attempts give the latency percentiles
PAGE = 100


class Window(StrEnum):
    """The span a statistic covers."""

    HOUR = "hour"
    DAY = "day"


WINDOW_MS = {Window.HOUR: 3_600_000, Window.DAY: 86_400_000}
BUCKET_MS = {Window.HOUR: 60_000, Window.DAY: 900_000}
DELIVERED = {RunStatus.SUCCESS}
FAILED = {RunStatus.FAILED, RunStatus.DEAD_LETTER}


@dataclass(frozen=True)
class RunPoint:
    """What a statistic needs of one run: when it was created and finished, and how it ended."""

    run_id: str
    created_ms: int
    finished_ms: int | None
    status: str


def percentile(values: Sequence[int], share: float) -> int | None:
    """Nearest-rank percentile (`share` in 0-1) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def summarize(
    window: Window, now_ms: int, runs: Iterable[RunPoint], latencies: Sequence[int], truncated: bool
) -> dict[str, Any]:
    """Buckets of finished runs (by finish time) and the figures of the window; pure."""
    span, size = WINDOW_MS[window], BUCKET_MS[window]
    end = now_ms - now_ms % size + size  # the bucket holding `now` is the last one
    start = end - span
    count = span // size
    delivered, failed = [0] * count, [0] * count
    for run in runs:
        if run.finished_ms is None or not start <= run.finished_ms < end:
            continue
        index = (run.finished_ms - start) // size
        if run.status in DELIVERED:
            delivered[index] += 1
        elif run.status in FAILED:
            failed[index] += 1
    ok, bad = sum(delivered), sum(failed)
    return {
        "window": str(window),
        "since": clock.iso_ms(start),
        "until": clock.iso_ms(end),
        "bucket_seconds": size // 1000,
        "buckets": [
            {"start": clock.iso_ms(start + i * size), "delivered": delivered[i], "failed": failed[i]}
            for i in range(count)
        ],
        "delivered": ok,
        "failed": bad,
        "success_rate": round(ok / (ok + bad), 4) if ok + bad else None,
        "latency_ms": {
            "p50": percentile(latencies, 0.5),
            "p99": percentile(latencies, 0.99),
            "samples": len(latencies),
        },
        "truncated": truncated,
    }


def _recent_runs(
    app_id: str, since_ms: int, now_ms: int, deadline: float, endpoint_id: str | None = None
) -> tuple[list[RunPoint], bool]:
    """The App's runs (of one Endpoint, when given) created since `since_ms`, newest first, at most
    MAX_RUNS and what was read by `deadline` (`clock.monotonic()`), and whether more may exist. Run
    ids are time-ordered, so a filtered walk stops as soon as the runs it has read are older than the
    window, even when none of them matched."""
    points: list[RunPoint] = []
    cursor: dict[str, Any] | None = None
    while True:
        if clock.monotonic() >= deadline:
            return points, True
        page = run_data.list_page(app_id, PAGE, cursor, now_ms, endpoint_id=endpoint_id)
        for run in page.items:
            if int(run.created_at) < since_ms:
                return points, False
            finished = None if run.finished_at is None else int(run.finished_at)
            points.append(RunPoint(run.run_id, int(run.created_at), finished, str(run.status)))
            if len(points) >= MAX_RUNS:
                return points, True
        if page.last_key is None:
            return points, False
        read_ms = ms_of(str(page.last_key["run_id"]["S"]))
        if read_ms is not None and read_ms < since_ms:
            return points, False
        cursor = page.last_key


def _latencies(app_id: str, runs: Sequence[RunPoint], since_ms: int, deadline: float) -> list[int]:
    values: list[int] = []
    for run in [r for r in runs if r.finished_ms is not None][:LATENCY_RUNS]:
        if clock.monotonic() >= deadline:
            break
        page = attempt_data.list_page(app_id, run.run_id, PAGE, None)
        values.extend(int(a.latency_ms) for a in page.items if int(a.started_at) >= since_ms)
    return values


def delivery_stats(
    app_id: str,
    window: Window,
    now_ms: int,
    endpoint_id: str | None = None,
    deadline: float | None = None,
) -> dict[str, Any]:
    """The statistics of `window` up to `now_ms` for one App, or for one of its Endpoints, read
    until `deadline` at the latest."""
    since = now_ms - WINDOW_MS[window] - BUCKET_MS[window]
    stop = clock.monotonic() + WORK_MS / 1000 if deadline is None else deadline
    runs, truncated = _recent_runs(app_id, since, now_ms, stop, endpoint_id)
    return summarize(window, now_ms, runs, _latencies(app_id, runs, since, stop), truncated)
