"""`edgecron runs`: Task Runs (direct ones and any run's state), their attempts, and `watch`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.text import Text

from edgecron_cli import output
from edgecron_cli.client import EXIT_API_ERROR, EXIT_OK, Client
from edgecron_cli.commands._common import (
    All,
    Cursor,
    Group,
    IdempotencyKey,
    JsonFlag,
    Limit,
    Payload,
    client,
    fetch_list,
    parse_json_value,
    show_list,
    show_one,
    want_json,
)

app = Group("runs", "Task Runs: deliver now or later, follow their attempts.")

TERMINAL = frozenset({"success", "failed", "dead_letter", "cancelled"})

COLUMNS: list[output.Column] = [
    ("id", "id"),
    ("endpoint_id", "endpoint_id"),
    ("source", "source"),
    ("status", "status"),
    ("attempts", "attempt_count"),
    ("last_status", "last_status_code"),
    ("created_at", "created_at"),
]
FIELDS: list[output.Column] = [
    ("id", "id"),
    ("endpoint_id", "endpoint_id"),
    ("source", "source"),
    ("source_id", "source_id"),
    ("fire_time", "fire_time"),
    ("status", "status"),
    ("attempt_count", "attempt_count"),
    ("total_attempts", "total_attempts"),
    ("series", "series"),
    ("deliver_at", "deliver_at"),
    ("next_retry_at", "next_retry_at"),
    ("last_status_code", "last_status_code"),
    ("last_error", "last_error"),
    ("last_error_kind", "last_error_kind"),
    ("payload", output.payload_of),
    ("created_at", "created_at"),
    ("updated_at", "updated_at"),
    ("finished_at", "finished_at"),
]
ATTEMPT_COLUMNS: list[output.Column] = [
    ("#", "attempt_number"),
    ("series", "series"),
    ("status_code", "status_code"),
    ("latency_ms", "latency_ms"),
    ("outcome", "outcome"),
    ("error", "error"),
    ("started_at", "started_at"),
    ("request_id", "request_id"),
]

RunId = Annotated[str, typer.Argument(help="Task Run id.")]


@app.command("create")
def create(
    endpoint_id: Annotated[str, typer.Argument(help="Endpoint to deliver to.")],
    payload: Payload = None,
    deliver_at: Annotated[str | None, typer.Option(help="Deliver at or after (RFC 3339).")] = None,
    delay_sec: Annotated[int | None, typer.Option(min=0, help="Deliver after N seconds.")] = None,
    idempotency_key: IdempotencyKey = None,
    json_flag: JsonFlag = False,
) -> None:
    """Create a direct Task Run: deliver now, at a time, or after a delay."""
    body: dict[str, Any] = {"endpoint_id": endpoint_id}
    if payload is not None:
        body["payload"] = parse_json_value(payload)
    if deliver_at is not None:
        body["deliver_at"] = deliver_at
    if delay_sec is not None:
        body["delay_sec"] = delay_sec
    show_one(client().task_runs.create(body, idempotency_key=idempotency_key), FIELDS, json_flag=json_flag)


@app.command("list")
def list_(
    status: Annotated[str | None, typer.Option(help="pending, running, success, failed, ...")] = None,
    endpoint: Annotated[str | None, typer.Option("--endpoint", help="Only this Endpoint's runs.")] = None,
    source: Annotated[str | None, typer.Option(help="direct, schedule or event.")] = None,
    limit: Limit = None,
    all_: All = False,
    cursor: Cursor = None,
    json_flag: JsonFlag = False,
) -> None:
    """List Task Runs, newest first."""
    filters = {"status": status, "endpoint_id": endpoint, "source": source}
    page = fetch_list(client().task_runs, limit, cursor, all_, **filters)
    show_list(page, COLUMNS, json_flag=json_flag, empty="no task runs")


@app.command("get")
def get(run_id: RunId, json_flag: JsonFlag = False) -> None:
    """Show a Task Run."""
    show_one(client().task_runs.get(run_id), FIELDS, json_flag=json_flag)


@app.command("cancel")
def cancel(run_id: RunId, json_flag: JsonFlag = False) -> None:
    """Cancel a pending or retry_scheduled Task Run (409 otherwise)."""
    show_one(client().task_runs.cancel(run_id), FIELDS, json_flag=json_flag)


@app.command("attempts")
def attempts(
    run_id: RunId,
    limit: Limit = None,
    all_: All = False,
    cursor: Cursor = None,
    detail: Annotated[
        bool, typer.Option("--detail", help="Add what the HTTP library said about each error (debugging).")
    ] = False,
    json_flag: JsonFlag = False,
) -> None:
    """A Task Run's Delivery Attempts, oldest first."""
    page = fetch_list(client().task_runs.attempts, limit, cursor, all_, run_id)
    columns = [*ATTEMPT_COLUMNS, ("error_detail", "error_detail")] if detail else ATTEMPT_COLUMNS
    show_list(page, columns, json_flag=json_flag, empty="no attempts yet")


def attempt_line(attempt: Mapping[str, Any]) -> Text:
    """One attempt as a line for people: number, answer or error, latency."""
    code = attempt.get("status_code")
    answer = str(code) if code is not None else (attempt.get("error_kind") or "no answer")
    line = f"attempt {attempt.get('attempt_number')} (series {attempt.get('series')}): {answer}"
    line += f" in {attempt.get('latency_ms')} ms, {attempt.get('outcome')}"
    if attempt.get("error"):
        line += f": {attempt['error']}"
    return Text(line, style="green" if attempt.get("outcome") == "success" else "red")


def _status_line(run: Mapping[str, Any]) -> Text:
    line = f"run {run.get('id')}: {run.get('status')}"
    if run.get("status") == "retry_scheduled" and run.get("next_retry_at"):
        line += f" (next retry at {run['next_retry_at']})"
    return Text(line, style="bold")


def follow_run(api: Client, run_id: str, *, timeout: float, interval: float, as_json: bool) -> int:
    """Poll the run, print each attempt once as it appears, return the exit code when it settles."""
    out = output.console()
    deadline = time.monotonic() + timeout
    seen: set[tuple[Any, Any, Any]] = set()
    last_status: str | None = None
    while True:
        run = api.task_runs.get(
            run_id
        )  # the run first: if it is terminal, the attempts read next are complete
        for attempt in api.task_runs.attempts.iter(run_id):
            key = (attempt.get("series"), attempt.get("sequence"), attempt.get("request_id"))
            if key in seen:
                continue
            seen.add(key)
            if as_json:
                output.print_json_line({"attempt": attempt})
            else:
                out.print(attempt_line(attempt))
        status = str(run.get("status"))
        if status != last_status and not as_json:
            out.print(_status_line(run))
        last_status = status
        if status in TERMINAL:
            if as_json:
                output.print_json_line({"run": run})
            return EXIT_OK if status == "success" else EXIT_API_ERROR
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if as_json:
                output.print_json_line({"run": run, "timed_out": True})
            else:
                output.print_error(f"error: run {run_id} is still {status} after {timeout:g} s")
            return EXIT_API_ERROR
        time.sleep(min(interval, remaining))


@app.command("watch")
def watch(
    run_id: RunId,
    timeout: Annotated[float, typer.Option(min=0, help="Give up after this many seconds (exit 1).")] = 300.0,
    interval: Annotated[float, typer.Option(min=0.1, help="Seconds between polls.")] = 1.0,
    json_flag: JsonFlag = False,
) -> None:
    """Follow a run live until it settles: exit 0 on success, 1 on failed/dead_letter/cancelled/timeout.

    With --json, one JSON object per line: {"attempt": {...}} for each attempt, then {"run": {...}}.
    """
    code = follow_run(client(), run_id, timeout=timeout, interval=interval, as_json=want_json(json_flag))
    raise typer.Exit(code)
