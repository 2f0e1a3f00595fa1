"""`edgecron dead-letters`: runs whose attempts are exhausted; inspect, replay one, replay in bulk."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from edgecron_cli import output
from edgecron_cli.client import Client
from edgecron_cli.commands import runs
from edgecron_cli.commands._common import (
    All,
    Cursor,
    Group,
    JsonFlag,
    Limit,
    client,
    fetch_list,
    show_list,
    show_one,
    want_json,
)

app = Group("dead-letters", "Dead letters: list, replay one, replay in bulk.")

COLUMNS: list[output.Column] = [
    ("id", "id"),
    ("endpoint_id", "endpoint_id"),
    ("source", "source"),
    ("attempts", "attempt_count"),
    ("error_kind", "last_error_kind"),
    ("last_error", "last_error"),
    ("finished_at", "finished_at"),
]

EndpointFilter = Annotated[str | None, typer.Option("--endpoint", help="Only this Endpoint's.")]
Since = Annotated[str | None, typer.Option(help="Dead-lettered at or after (RFC 3339).")]
Until = Annotated[str | None, typer.Option(help="Dead-lettered at or before (RFC 3339).")]
ErrorKind = Annotated[
    str | None, typer.Option(help="timeout, network, http_4xx, http_5xx, http_429, poison, ...")
]


@app.command("list")
def list_(
    endpoint: EndpointFilter = None,
    since: Since = None,
    until: Until = None,
    error_kind: ErrorKind = None,
    limit: Limit = None,
    all_: All = False,
    cursor: Cursor = None,
    json_flag: JsonFlag = False,
) -> None:
    """List dead letters, newest first."""
    filters = {"endpoint_id": endpoint, "since": since, "until": until, "error_kind": error_kind}
    page = fetch_list(client().dead_letters, limit, cursor, all_, **filters)
    show_list(page, COLUMNS, json_flag=json_flag, empty="no dead letters")


@app.command("replay")
def replay(
    run_id: Annotated[str, typer.Argument(help="Task Run id of the dead letter.")],
    json_flag: JsonFlag = False,
) -> None:
    """Replay one dead letter: a new attempt series (follow it with `edgecron runs watch`)."""
    show_one(client().dead_letters.replay(run_id), runs.FIELDS, json_flag=json_flag)


def count_dead_letters(api: Client, filters: dict[str, Any]) -> int:
    """How many match, for the progress bar's total (one listing, 100 per page)."""
    return sum(len(page.get("data") or []) for page in api.dead_letters.pages(**filters))


def replay_all_matching(
    api: Client, filters: dict[str, Any], batch: int, progress: Progress | None = None
) -> dict[str, Any]:
    """Call the bulk replay while it says has_more, each call resuming at the previous one's
    next_cursor (a call may replay nothing yet move on: it read only dead letters that do not match)."""
    task = (
        progress.add_task("replaying", total=count_dead_letters(api, filters) or None) if progress else None
    )
    totals: dict[str, Any] = {"replayed": 0, "skipped": 0, "has_more": False, "calls": 0}
    cursor: str | None = None
    while True:
        result = api.dead_letters.replay_bulk({**filters, "limit": batch, "cursor": cursor})
        totals["calls"] += 1
        totals["replayed"] += int(result.get("replayed", 0))
        totals["skipped"] += int(result.get("skipped", 0))
        totals["has_more"] = bool(result.get("has_more"))
        if progress is not None and task is not None:
            done = totals["replayed"] + totals["skipped"]
            total = progress.tasks[task].total
            progress.update(task, completed=done, total=max(total or 0, done) or None)
        cursor = result.get("next_cursor")
        if not totals["has_more"] or not cursor:
            return totals


@app.command("replay-all")
def replay_all(
    endpoint: EndpointFilter = None,
    since: Since = None,
    until: Annotated[
        str | None,
        typer.Option(help="Dead-lettered at or before (RFC 3339; default: when the command starts)."),
    ] = None,
    error_kind: ErrorKind = None,
    batch: Annotated[int, typer.Option(min=1, max=1000, help="Dead letters per API call.")] = 100,
    json_flag: JsonFlag = False,
) -> None:
    """Replay every dead letter matching the filters, in batches, with a progress bar.

    `--until` defaults to now, so runs that die again while this runs are not replayed in a loop.
    """
    until = until or datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    filters = {"endpoint_id": endpoint, "since": since, "until": until, "error_kind": error_kind}
    filters = {k: v for k, v in filters.items() if v is not None}
    api = client()
    as_json = want_json(json_flag)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=output.err_console(), disable=as_json, transient=False) as progress:
        totals = replay_all_matching(api, filters, batch, progress)
    if as_json:
        output.print_json(totals)
        return
    line = f"replayed {totals['replayed']}, skipped {totals['skipped']} in {totals['calls']} call(s)"
    if totals["has_more"]:
        line += "; stopped: a call replayed nothing although more match (run it again)"
    output.console().print(line, markup=False)
