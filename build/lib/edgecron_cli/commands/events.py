"""`edgecron events`: publish business Events (fanned out to matching Endpoints) and look them up."""

from __future__ import annotations

from typing import Annotated

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
    show_list,
    show_one,
    want_json,
)

app = Group("events", "Events: publish one, fanned out to every matching Endpoint.")

COLUMNS: list[output.Column] = [
    ("id", "id"),
    ("name", "name"),
    ("fanout", "fanout_status"),
    ("endpoints", "matched_endpoints"),
    ("idempotency_key", "idempotency_key"),
    ("created_at", "created_at"),
]
FIELDS: list[output.Column] = [*COLUMNS, ("payload", output.payload_of)]
DELIVERY_COLUMNS: list[output.Column] = [
    ("endpoint_id", "endpoint_id"),
    ("task_run_id", "task_run_id"),
    ("status", "status"),
    ("attempts", "attempt_count"),
    ("last_status", "last_status_code"),
    ("last_error", "last_error"),
]


@app.command("publish")
def publish(
    name: Annotated[str, typer.Argument(help="Event name, e.g. invoice.paid.")],
    payload: Payload = None,
    idempotency_key: IdempotencyKey = None,
    json_flag: JsonFlag = False,
) -> None:
    """Publish an Event (one billable trigger, however many Endpoints it reaches)."""
    value = parse_json_value(payload) if payload is not None else None
    show_one(
        client().events.publish(name, value, idempotency_key=idempotency_key), FIELDS, json_flag=json_flag
    )


@app.command("get")
def get(
    event_id: Annotated[str, typer.Argument(help="Event id.")],
    limit: Limit = None,
    all_: Annotated[bool, typer.Option("--all", help="Follow deliveries_next_cursor to the end.")] = False,
    cursor: Cursor = None,
    json_flag: JsonFlag = False,
) -> None:
    """Show an Event with its deliveries (one Task Run per matched Endpoint)."""
    api = client()
    event = (api.events.get_all if all_ else api.events.get)(event_id, limit=limit, cursor=cursor)
    if want_json(json_flag):
        output.print_json(event)
        return
    output.print_detail(event, FIELDS)
    output.print_list(
        {"data": event.get("deliveries"), "next_cursor": event.get("deliveries_next_cursor")},
        DELIVERY_COLUMNS,
        empty="no deliveries yet",
    )


@app.command("list")
def list_(
    name: Annotated[str | None, typer.Option(help="Only this exact event name.")] = None,
    since: Annotated[str | None, typer.Option(help="Created at or after (RFC 3339).")] = None,
    until: Annotated[str | None, typer.Option(help="Created at or before (RFC 3339).")] = None,
    limit: Limit = None,
    all_: All = False,
    cursor: Cursor = None,
    json_flag: JsonFlag = False,
) -> None:
    """List Events, newest first."""
    filters = {"name": name, "since": since, "until": until}
    page = fetch_list(client().events, limit, cursor, all_, **filters)
    show_list(page, COLUMNS, json_flag=json_flag, empty="no events")
