"""`edgecron schedules`: cron and one-time Schedules, and their run history (Fires)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from edgecron_cli import output
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
    show_deleted,
    show_list,
    show_one,
    want_json,
)

app = Group("schedules", "Schedules (cron or one-time) and their fires.")

COLUMNS: list[output.Column] = [
    ("id", "id"),
    ("name", "name"),
    ("when", lambda s: s.get("cron") or s.get("at")),
    ("timezone", "timezone"),
    ("status", "status"),
    ("next_fire_time", "next_fire_time"),
    ("failures", "consecutive_failures"),
]
FIELDS: list[output.Column] = [
    ("id", "id"),
    ("name", "name"),
    ("cron", "cron"),
    ("cron_equivalent", "cron_equivalent"),
    ("at", "at"),
    ("timezone", "timezone"),
    ("endpoint_ids", lambda s: s.get("endpoint_ids") or "every active endpoint"),
    ("payload", output.payload_of),
    ("missed_policy", "missed_policy"),
    ("retry_policy_id", "retry_policy_id"),
    ("status", "status"),
    ("pause_reason", "pause_reason"),
    ("consecutive_failures", "consecutive_failures"),
    ("next_fire_time", "next_fire_time"),
    ("last_fire_time", "last_fire_time"),
    ("start_at", "start_at"),
    ("end_at", "end_at"),
    ("jitter_sec", "jitter_sec"),
    ("overlap_policy", "overlap_policy"),
    ("finished", "finished"),
    ("missed_left_out", "missed_left_out"),
    ("created_at", "created_at"),
    ("updated_at", "updated_at"),
]
FIRE_COLUMNS: list[output.Column] = [
    ("fire_time", "fire_time"),
    ("due_at", "due_at"),
    ("manual", "manual"),
    ("status", "status"),
    ("duration_ms", "duration_ms"),
    ("runs", lambda f: [f"{r['id']} {r['status']}" for r in f.get("runs", [])]),
    ("error", "error"),
]

Name = Annotated[str | None, typer.Option(help="A name.")]
Cron = Annotated[
    str | None,
    typer.Option(
        help="Cron: 5 fields, or 6 with seconds first; or EventBridge cron(...), rate(...) or at(...)."
    ),
]
At = Annotated[str | None, typer.Option(help="One-time fire time, RFC 3339 (e.g. 2030-01-01T09:00:00Z).")]
Timezone = Annotated[str | None, typer.Option(help="IANA zone (default UTC).")]
Endpoint = Annotated[
    list[str] | None,
    typer.Option("--endpoint", help="Endpoint id, repeatable (default: every active Endpoint)."),
]
MissedPolicy = Annotated[str | None, typer.Option(help="RUN_ONCE (default) or SKIP.")]
RetryPolicy = Annotated[
    str | None, typer.Option("--retry-policy", help="Retry Policy overriding the Endpoints' own.")
]
ScheduleId = Annotated[str, typer.Argument(help="Schedule id.")]
StartAt = Annotated[str | None, typer.Option("--start-at", help="No fire before this time (RFC 3339).")]
EndAt = Annotated[str | None, typer.Option("--end-at", help="No fire after this time (RFC 3339).")]
JitterSec = Annotated[
    int | None,
    typer.Option(
        "--jitter-sec", min=0, max=3600, help="Deliver each fire up to this many seconds late (0-3600)."
    ),
]
OverlapPolicy = Annotated[
    str | None,
    typer.Option(
        "--overlap-policy", help="While the previous fire is open: ALLOW (default), SKIP or BUFFER_ONE."
    ),
]


@app.command("create")
def create(
    name: Name = None,
    cron: Cron = None,
    at: At = None,
    timezone: Timezone = None,
    endpoint: Endpoint = None,
    payload: Payload = None,
    missed_policy: MissedPolicy = None,
    retry_policy: RetryPolicy = None,
    start_at: StartAt = None,
    end_at: EndAt = None,
    jitter_sec: JitterSec = None,
    overlap_policy: OverlapPolicy = None,
    paused: Annotated[bool, typer.Option("--paused", help="Create it PAUSED.")] = False,
    idempotency_key: IdempotencyKey = None,
    json_flag: JsonFlag = False,
) -> None:
    """Create a Schedule: give --cron or --at."""
    if (cron is None) == (at is None):
        raise typer.BadParameter("give either --cron or --at", param_hint="--cron/--at")
    optional = {
        "name": name,
        "cron": cron,
        "at": at,
        "timezone": timezone,
        "endpoint_ids": endpoint,
        "missed_policy": missed_policy.upper() if missed_policy else None,
        "retry_policy_id": retry_policy,
        "start_at": start_at,
        "end_at": end_at,
        "jitter_sec": jitter_sec,
        "overlap_policy": overlap_policy.upper() if overlap_policy else None,
    }
    body: dict[str, Any] = {k: v for k, v in optional.items() if v is not None}
    if payload is not None:
        body["payload"] = parse_json_value(payload)
    if paused:
        body["status"] = "PAUSED"
    show_one(client().schedules.create(body, idempotency_key=idempotency_key), FIELDS, json_flag=json_flag)


@app.command("list")
def list_(limit: Limit = None, all_: All = False, cursor: Cursor = None, json_flag: JsonFlag = False) -> None:
    """List Schedules."""
    page = fetch_list(client().schedules, limit, cursor, all_)
    show_list(page, COLUMNS, json_flag=json_flag, empty="no schedules")


@app.command("get")
def get(
    schedule_id: ScheduleId,
    preview: Annotated[int, typer.Option(min=0, max=20, help="Also show the next N fire times.")] = 0,
    json_flag: JsonFlag = False,
) -> None:
    """Show a Schedule, optionally with a preview of its next fire times."""
    schedule = client().schedules.get(schedule_id, preview=preview)
    fields = [*FIELDS, ("preview", "preview")] if preview else FIELDS
    show_one(schedule, fields, json_flag=json_flag)


@app.command("update")
def update(
    schedule_id: ScheduleId,
    name: Name = None,
    cron: Cron = None,
    at: At = None,
    timezone: Timezone = None,
    endpoint: Endpoint = None,
    all_endpoints: Annotated[
        bool, typer.Option("--all-endpoints", help="Deliver to every active Endpoint.")
    ] = False,
    payload: Payload = None,
    missed_policy: MissedPolicy = None,
    retry_policy: RetryPolicy = None,
    no_retry_policy: Annotated[
        bool, typer.Option("--no-retry-policy", help="Drop the override: use the Endpoints' policy.")
    ] = False,
    start_at: StartAt = None,
    end_at: EndAt = None,
    jitter_sec: JitterSec = None,
    overlap_policy: OverlapPolicy = None,
    json_flag: JsonFlag = False,
) -> None:
    """Change a Schedule; only the flags given are sent (PATCH). Use pause/resume for its status."""
    optional = {
        "name": name,
        "cron": cron,
        "at": at,
        "timezone": timezone,
        "endpoint_ids": endpoint,
        "missed_policy": missed_policy.upper() if missed_policy else None,
        "retry_policy_id": retry_policy,
        "start_at": start_at,
        "end_at": end_at,
        "jitter_sec": jitter_sec,
        "overlap_policy": overlap_policy.upper() if overlap_policy else None,
    }
    changes: dict[str, Any] = {k: v for k, v in optional.items() if v is not None}
    if payload is not None:
        changes["payload"] = parse_json_value(payload)
    if all_endpoints:
        changes["endpoint_ids"] = []
    if no_retry_policy:
        changes["retry_policy_id"] = None
    if not changes:
        raise typer.BadParameter("nothing to change: give at least one option", param_hint="options")
    show_one(client().schedules.update(schedule_id, changes), FIELDS, json_flag=json_flag)


@app.command("pause")
def pause(
    schedule_id: ScheduleId,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (up to 500 characters), shown until resumed.")
    ] = None,
    json_flag: JsonFlag = False,
) -> None:
    """Pause a Schedule (its dispatched fires and pending retries are cancelled)."""
    show_one(client().schedules.pause(schedule_id, reason=reason), FIELDS, json_flag=json_flag)


@app.command("trigger")
def trigger(schedule_id: ScheduleId, json_flag: JsonFlag = False) -> None:
    """Fire a Schedule once now, outside its cron times (its next fire time does not move)."""
    show_one(client().schedules.trigger(schedule_id), FIRE_COLUMNS, json_flag=json_flag)


@app.command("resume")
def resume(schedule_id: ScheduleId, json_flag: JsonFlag = False) -> None:
    """Resume a paused Schedule (resets its failure counter)."""
    show_one(client().schedules.resume(schedule_id), FIELDS, json_flag=json_flag)


@app.command("delete")
def delete(schedule_id: ScheduleId, json_flag: JsonFlag = False) -> None:
    """Delete a Schedule (its pending runs are cancelled)."""
    client().schedules.delete(schedule_id)
    show_deleted("schedule", schedule_id, json_flag=json_flag)


@app.command("fires")
def fires(
    schedule_id: ScheduleId,
    limit: Annotated[int | None, typer.Option(min=1, max=50, help="Page size, 1-50 (default 20).")] = None,
    all_: All = False,
    cursor: Cursor = None,
    json_flag: JsonFlag = False,
) -> None:
    """Recent fires of a Schedule, newest first, with their Task Runs."""
    history = fetch_list(client().schedules.fires, limit, cursor, all_, schedule_id)
    if want_json(json_flag):
        output.print_json(history)
    else:
        output.print_list(history, FIRE_COLUMNS, empty="no fires yet")
