"""Entity → response model: Task Runs, their attempts, and what a replay of dead letters did."""

from __future__ import annotations

from typing import Any

from edgecron.api.mappers import error_kind, optional_int
from edgecron.api.pagination import encode_cursor
from edgecron.clock import iso_ms
from edgecron.domain.attempts import Attempt
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import RunStatus, Source
from edgecron.schemas.task_runs import AttemptOut, ReplayResult, TaskRunOut, TaskRunSummary


def _run_fields(run: TaskRun) -> dict[str, Any]:
    return {
        "id": run.run_id,
        "endpoint_id": run.endpoint_id,
        "source": Source(run.source),
        "source_id": run.source_id,
        "fire_time": iso_ms(run.fire_at),
        "status": RunStatus(run.status),
        "attempt_count": int(run.attempt_count),
        "total_attempts": int(run.total_attempts),
        "series": int(run.series),
        "deliver_at": iso_ms(run.deliver_at),
        "next_retry_at": iso_ms(run.next_retry_at),
        "last_status_code": optional_int(run.last_status_code),
        "last_error": run.last_error,
        "last_error_kind": error_kind(run.last_error_kind),
        "created_at": iso_ms(run.created_at) or "",
        "updated_at": iso_ms(run.updated_at) or "",
        "finished_at": iso_ms(run.finished_at),
    }


def task_run_out(run: TaskRun) -> TaskRunOut:
    return TaskRunOut(**_run_fields(run), payload=run.payload)


def task_run_summary(run: TaskRun) -> TaskRunSummary:
    """A run in a list: without its payload."""
    return TaskRunSummary(**_run_fields(run))


def attempt_out(a: Attempt) -> AttemptOut:
    return AttemptOut(
        attempt_number=int(a.attempt_no),
        series=int(a.series),
        sequence=int(a.seq),
        request_id=a.request_id,
        status_code=optional_int(a.status_code),
        latency_ms=int(a.latency_ms),
        response_summary=a.response_summary,
        error=a.error,
        error_kind=error_kind(a.error_kind),
        error_detail=a.error_detail,
        outcome=a.outcome,
        trace_id=a.trace_id,
        started_at=iso_ms(a.started_at) or "",
    )


def replay_result(result: Any) -> ReplayResult:
    return ReplayResult(
        replayed=result.replayed,
        skipped=result.skipped,
        has_more=result.has_more,
        next_cursor=encode_cursor(result.next_key),
    )
