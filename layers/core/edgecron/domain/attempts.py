"""The Delivery Attempt entity: one outbound HTTP call of a Task Run, as the data layer returns it
(data/attempts.py owns where it is stored)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Attempt:
    run_id: str
    seq: int  # across the run's replays: the attempt's place in its history
    app_id: str
    attempt_no: int  # within the current series
    series: int
    request_id: str
    status_code: int | None
    latency_ms: int
    response_summary: str | None
    error: str | None
    error_kind: str | None
    outcome: str
    started_at: int
    trace_id: str | None = None
    expires_at: int | None = None
    error_detail: str | None = None  # what the HTTP library or the OS said, for debugging
