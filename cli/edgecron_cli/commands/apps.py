"""`edgecron apps`: App management with the operator's admin key."""

from __future__ import annotations

from typing import Annotated

import typer

from edgecron_cli import output
from edgecron_cli.commands._common import Group, JsonFlag, client, show_one, want_json

app = Group("apps", "Apps (tenants); needs the admin key.")

FIELDS: list[output.Column] = [
    ("id", "id"),
    ("name", "name"),
    ("monthly_quota", lambda a: a.get("monthly_quota") or "unlimited"),
    ("created_at", "created_at"),
]


@app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="A name for the App.")],
    quota: Annotated[
        int | None, typer.Option("--quota", min=1, help="Billable triggers per month (default: unlimited).")
    ] = None,
    json_flag: JsonFlag = False,
) -> None:
    """Create an App; its first API key is printed once, so store it."""
    created = client(admin=True).apps.create(name, quota)
    if want_json(json_flag):
        output.print_json(created)
        return
    output.print_detail(created["app"], FIELDS)
    output.print_secret("api_key", created["api_key"])


@app.command("set-quota")
def set_quota(
    app_id: Annotated[str, typer.Argument(help="The App's id (app_...).")],
    quota: Annotated[int | None, typer.Argument(min=1, help="Billable triggers per month.")] = None,
    unlimited: Annotated[bool, typer.Option("--unlimited", help="Clear the quota.")] = False,
    json_flag: JsonFlag = False,
) -> None:
    """Set or clear an App's monthly quota of billable triggers."""
    if (quota is None) == (not unlimited):
        raise typer.BadParameter("give either QUOTA or --unlimited", param_hint="QUOTA")
    show_one(client(admin=True).apps.set_quota(app_id, quota), FIELDS, json_flag=json_flag)


RATE_FIELDS: list[output.Column] = [
    ("app_id", "app_id"),
    ("requests_per_sec", lambda r: r.get("requests_per_sec") or "none (the stage's throttle only)"),
]


@app.command("set-rate-limit")
def set_rate_limit(
    app_id: Annotated[str, typer.Argument(help="The App's id (app_...).")],
    rate: Annotated[int | None, typer.Argument(min=1, help="Requests per second.")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove the App's own rate.")] = False,
    json_flag: JsonFlag = False,
) -> None:
    """Set or clear an App's request rate (beyond it the API answers 429 with Retry-After)."""
    if (rate is None) == (not clear):
        raise typer.BadParameter("give either RATE or --clear", param_hint="RATE")
    show_one(client(admin=True).apps.set_rate_limit(app_id, rate), RATE_FIELDS, json_flag=json_flag)
