"""`edgecron endpoints`: where EdgeCron delivers."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
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
    client,
    fetch_list,
    parse_headers,
    show_deleted,
    show_list,
    show_one,
    want_json,
)

app = Group("endpoints", "Endpoints: where EdgeCron delivers.")

COLUMNS: list[output.Column] = [
    ("id", "id"),
    ("url", "url"),
    ("method", "method"),
    ("events", "filter_events"),
    ("retry_policy", "retry_policy_id"),
    ("active", "active"),
    ("health", lambda e: (e.get("health") or {}).get("state")),
]
FIELDS: list[output.Column] = [
    ("id", "id"),
    ("url", "url"),
    ("description", "description"),
    ("method", "method"),
    ("headers", lambda e: output.masked_headers(e.get("headers"))),
    ("timeout_ms", "timeout_ms"),
    ("retry_policy_id", "retry_policy_id"),
    ("filter_events", "filter_events"),
    ("active", "active"),
    ("disabled_reason", "disabled_reason"),
    ("health", lambda e: (e.get("health") or {}).get("state")),
    ("consecutive_failures", lambda e: (e.get("health") or {}).get("consecutive_failures")),
    ("failing_since", lambda e: (e.get("health") or {}).get("failing_since")),
    ("last_success_at", lambda e: (e.get("health") or {}).get("last_success_at")),
    (
        "disable_after",
        lambda e: f"{e.get('disable_after_failures')} failures, {e.get('disable_after_sec')} s",
    ),
    ("max_per_sec", "max_per_sec"),
    ("max_in_flight", "max_in_flight"),
    ("created_at", "created_at"),
    ("updated_at", "updated_at"),
]

Method = Annotated[str | None, typer.Option(help="POST (default), PUT, PATCH, GET or DELETE.")]
Header = Annotated[list[str] | None, typer.Option("--header", help="'Name: value', repeatable.")]
TimeoutMs = Annotated[int | None, typer.Option(help="Per-attempt timeout, 100-25000 ms.")]
RetryPolicy = Annotated[str | None, typer.Option("--retry-policy", help="Retry Policy id.")]
Event = Annotated[
    list[str] | None,
    typer.Option("--event", help="Event name or pattern (invoice.*, * = all), repeatable."),
]
Description = Annotated[str | None, typer.Option(help="Free text.")]
DisableAfterFailures = Annotated[
    int | None,
    typer.Option(help="Disable after this many failed runs in a row (0 = never; default 100)..."),
]
DisableAfterSec = Annotated[
    int | None, typer.Option(help="...over at least this many seconds (default 432000, five days).")
]
MaxPerSec = Annotated[
    float | None,
    typer.Option(help="At most this many deliveries a second, across every worker (0.01-10000)."),
]
MaxInFlight = Annotated[
    int | None, typer.Option(help="At most this many deliveries in flight at once (1-100).")
]
EndpointId = Annotated[str, typer.Argument(help="Endpoint id (ep_...).")]


def _show_with_secret(endpoint: Mapping[str, Any], json_flag: bool) -> None:
    if want_json(json_flag):
        output.print_json(endpoint)
        return
    output.print_detail(endpoint, FIELDS)
    output.print_secret("secret", endpoint["secret"])


@app.command("create")
def create(
    url: Annotated[str, typer.Argument(help="http(s) URL to deliver to.")],
    method: Method = None,
    header: Header = None,
    timeout_ms: TimeoutMs = None,
    retry_policy: RetryPolicy = None,
    event: Event = None,
    description: Description = None,
    disable_after_failures: DisableAfterFailures = None,
    disable_after_sec: DisableAfterSec = None,
    max_per_sec: MaxPerSec = None,
    max_in_flight: MaxInFlight = None,
    inactive: Annotated[bool, typer.Option("--inactive", help="Create it switched off.")] = False,
    idempotency_key: IdempotencyKey = None,
    json_flag: JsonFlag = False,
) -> None:
    """Create an Endpoint; its signing secret is printed once."""
    body: dict[str, Any] = {"url": url}
    optional = {
        "method": method.upper() if method else None,
        "headers": parse_headers(header) if header else None,
        "timeout_ms": timeout_ms,
        "retry_policy_id": retry_policy,
        "filter_events": event,
        "description": description,
        "disable_after_failures": disable_after_failures,
        "disable_after_sec": disable_after_sec,
        "max_per_sec": max_per_sec,
        "max_in_flight": max_in_flight,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    if inactive:
        body["active"] = False
    _show_with_secret(client().endpoints.create(body, idempotency_key=idempotency_key), json_flag)


@app.command("list")
def list_(limit: Limit = None, all_: All = False, cursor: Cursor = None, json_flag: JsonFlag = False) -> None:
    """List Endpoints."""
    page = fetch_list(client().endpoints, limit, cursor, all_)
    show_list(page, COLUMNS, json_flag=json_flag, empty="no endpoints")


@app.command("get")
def get(endpoint_id: EndpointId, json_flag: JsonFlag = False) -> None:
    """Show an Endpoint (header values are masked in the table; --json has them)."""
    show_one(client().endpoints.get(endpoint_id), FIELDS, json_flag=json_flag)


@app.command("update")
def update(
    endpoint_id: EndpointId,
    url: Annotated[str | None, typer.Option(help="New URL.")] = None,
    method: Method = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", help="'Name: value', repeatable; replaces all headers.")
    ] = None,
    no_headers: Annotated[bool, typer.Option("--no-headers", help="Remove every header.")] = False,
    timeout_ms: TimeoutMs = None,
    retry_policy: RetryPolicy = None,
    no_retry_policy: Annotated[
        bool, typer.Option("--no-retry-policy", help="Use the default policy again.")
    ] = False,
    event: Annotated[
        list[str] | None,
        typer.Option("--event", help="Event name or pattern, repeatable; replaces the list."),
    ] = None,
    no_events: Annotated[bool, typer.Option("--no-events", help="Receive no events.")] = False,
    description: Description = None,
    disable_after_failures: DisableAfterFailures = None,
    disable_after_sec: DisableAfterSec = None,
    max_per_sec: MaxPerSec = None,
    no_max_per_sec: Annotated[bool, typer.Option("--no-max-per-sec", help="Remove the rate limit.")] = False,
    max_in_flight: MaxInFlight = None,
    no_max_in_flight: Annotated[
        bool, typer.Option("--no-max-in-flight", help="Remove the in-flight limit.")
    ] = False,
    active: Annotated[
        bool | None,
        typer.Option("--active/--inactive", help="Switch on or off; --active re-enables a disabled one."),
    ] = None,
    json_flag: JsonFlag = False,
) -> None:
    """Change an Endpoint; only the flags given are sent (PATCH)."""
    changes: dict[str, Any] = {}
    optional = {
        "url": url,
        "method": method.upper() if method else None,
        "headers": parse_headers(header) if header else None,
        "timeout_ms": timeout_ms,
        "retry_policy_id": retry_policy,
        "filter_events": event,
        "description": description,
        "disable_after_failures": disable_after_failures,
        "disable_after_sec": disable_after_sec,
        "max_per_sec": max_per_sec,
        "max_in_flight": max_in_flight,
        "active": active,
    }
    changes.update({k: v for k, v in optional.items() if v is not None})
    if no_headers:
        changes["headers"] = {}
    if no_retry_policy:
        changes["retry_policy_id"] = None
    if no_events:
        changes["filter_events"] = []
    if no_max_per_sec:
        changes["max_per_sec"] = None
    if no_max_in_flight:
        changes["max_in_flight"] = None
    if not changes:
        raise typer.BadParameter("nothing to change: give at least one option", param_hint="options")
    show_one(client().endpoints.update(endpoint_id, changes), FIELDS, json_flag=json_flag)


@app.command("delete")
def delete(endpoint_id: EndpointId, json_flag: JsonFlag = False) -> None:
    """Delete an Endpoint."""
    client().endpoints.delete(endpoint_id)
    show_deleted("endpoint", endpoint_id, json_flag=json_flag)


@app.command("rotate-secret")
def rotate_secret(endpoint_id: EndpointId, json_flag: JsonFlag = False) -> None:
    """Issue a new signing secret (printed once); the old one keeps signing for 24 h."""
    _show_with_secret(client().endpoints.rotate_secret(endpoint_id), json_flag)


@app.command("recover")
def recover(
    endpoint_id: EndpointId,
    since: Annotated[
        str, typer.Option(help="Runs that ended failed or dead_letter from this time (RFC 3339).")
    ],
    until: Annotated[str | None, typer.Option(help="... up to this time (RFC 3339; default: now).")] = None,
    json_flag: JsonFlag = False,
) -> None:
    """Re-send what failed: the Endpoint's failed and dead-lettered runs of the window, each as a new
    attempt series (calls again while the API says there is more)."""
    api = client()
    until = until or datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    total = {"recovered": 0, "calls": 0}
    cursor: str | None = None
    while True:
        result = api.endpoints.recover(endpoint_id, since, until, cursor)
        total["calls"] += 1
        total["recovered"] += int(result.get("recovered", 0))
        cursor = result.get("next_cursor")
        if not result.get("has_more") or not cursor:
            break
    if want_json(json_flag):
        output.print_json(total)
    else:
        typer.echo(f"recovered {total['recovered']} runs of {endpoint_id}")
