"""Task Runs, their attempts, and dead letters."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from edgecron.domain.task_runs import MAX_RUN_DELAY_SEC
from edgecron.domain.vocabulary import ErrorKind, RunStatus, Source
from edgecron.schemas.common import FromText, Id, Model, Page, Rfc3339, Strict


class TaskRunCreate(Strict):
    endpoint_id: Id
    payload: Any = Field(default=None, description="any JSON value, sent as the request body")
    deliver_at: Rfc3339 | None = Field(
        default=None, description="RFC 3339; deliver at or after; at most 365 days ahead"
    )
    delay_sec: int | None = Field(
        default=None, ge=0, le=MAX_RUN_DELAY_SEC, description="deliver after N seconds (at most 365 days)"
    )


class TaskRunSummary(Model):
    """A Task Run as a list shows it: without its payload."""

    id: str
    endpoint_id: str
    source: Source
    source_id: str | None
    fire_time: str | None
    status: RunStatus
    attempt_count: int
    total_attempts: int
    series: int
    deliver_at: str | None
    next_retry_at: str | None
    last_status_code: int | None
    last_error: str | None
    last_error_kind: ErrorKind | None
    created_at: str
    updated_at: str
    finished_at: str | None


class TaskRunOut(TaskRunSummary):
    payload: Any = None


class TaskRunPage(Page[TaskRunSummary]):
    pass


class AttemptOut(Model):
    attempt_number: int
    series: int
    sequence: int
    request_id: str
    status_code: int | None
    latency_ms: int
    response_summary: str | None
    error: str | None = Field(
        description="what went wrong, as a short sentence (e.g. 'connection refused (203.0.113.9:443)')"
    )
    error_kind: ErrorKind | None
    error_detail: str | None = Field(
        default=None, description="what the HTTP library or the operating system said, for debugging"
    )
    outcome: str
    trace_id: str | None
    started_at: str


class AttemptPage(Page[AttemptOut]):
    pass


class DeadLetterFilter(Strict):
    endpoint_id: Id | None = None
    since: Rfc3339 | None = None
    until: Rfc3339 | None = None
    error_kind: Annotated[ErrorKind, FromText] | None = None
    limit: int = Field(default=100, ge=1, le=1000, description="at most this many runs per call")
    cursor: str | None = Field(
        default=None, max_length=2048, description="next_cursor of the previous call: resume after it"
    )


class ReplayResult(Model):
    replayed: int
    skipped: int
    has_more: bool = Field(description="more dead letters may match: call again with next_cursor")
    next_cursor: str | None = Field(default=None, description="where the next call resumes")
