"""`edgecron usage` (billable triggers of a month) and `edgecron notifications` (auto-pauses, notices)."""

from __future__ import annotations

from typing import Annotated

import typer

from edgecron_cli import output
from edgecron_cli.commands._common import (
    All,
    Cursor,
    Group,
    JsonFlag,
    Limit,
    client,
    fetch_list,
    handled,
    show_list,
    show_one,
)

notifications = Group("notifications", "App notifications (auto-pauses, failing and disabled endpoints).")

USAGE_FIELDS: list[output.Column] = [
    ("month", "month"),
    ("schedule", "schedule"),
    ("event", "event"),
    ("direct", "direct"),
    ("total", "total"),
    ("monthly_quota", lambda u: u.get("monthly_quota") or "unlimited"),
]
NOTIFICATION_COLUMNS: list[output.Column] = [
    ("created_at", "created_at"),
    ("kind", "kind"),
    ("title", "title"),
    ("message", "message"),
]


@handled
def usage(
    month: Annotated[
        str | None, typer.Option(help="YYYY-MM (UTC); default: this month.", metavar="YYYY-MM")
    ] = None,
    json_flag: JsonFlag = False,
) -> None:
    """Billable triggers of a month: schedule fires, published events and direct runs."""
    show_one(client().usage(month), USAGE_FIELDS, json_flag=json_flag)


@notifications.command("list")
def list_(limit: Limit = None, all_: All = False, cursor: Cursor = None, json_flag: JsonFlag = False) -> None:
    """List notifications, newest first."""
    page = fetch_list(client().notifications, limit, cursor, all_)
    show_list(page, NOTIFICATION_COLUMNS, json_flag=json_flag, empty="no notifications")
