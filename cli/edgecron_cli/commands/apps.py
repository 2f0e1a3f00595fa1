"""`edgecron apps`: App management with the operator's admin key."""

from __future__ import annotations

import re
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
    show_list,
    show_one,
    want_json,
)

app = Group("apps", "Apps (tenants) and their API keys; needs the admin key.")
keys = Group("keys", "An App's API keys: list, create, rotate with a grace period, revoke.")
app.add_typer(keys)

FIELDS: list[output.Column] = [
    ("id", "id"),
    ("name", "name"),
    ("monthly_quota", lambda a: a.get("monthly_quota") or "unlimited"),
    ("created_at", "created_at"),
]


KEY_COLUMNS: list[output.Column] = [
    ("id", "id"),
    ("prefix", "prefix"),
    ("name", "name"),
    ("state", "state"),
    ("created_at", "created_at"),
    ("last_used_at", lambda k: k.get("last_used_at") or "never"),
    ("expires_at", "expires_at"),
]

AppId = Annotated[str, typer.Argument(help="The App's id (app_...).")]
KeyId = Annotated[str, typer.Argument(help="The key's id (key_..., from `apps keys list`).")]
_DURATION = re.compile(r"^(\d+)([smhd]?)$")
_UNIT_SEC = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: str) -> int:
    """Seconds from `90`, `90s`, `15m`, `24h` or `7d` (a usage error otherwise)."""
    match = _DURATION.match(value.strip().lower())
    if match is None:
        raise typer.BadParameter(
            f"{value!r} is not a duration: give seconds, or a number with s, m, h or d (e.g. 24h)",
            param_hint="--grace-period",
        )
    return int(match.group(1)) * _UNIT_SEC[match.group(2)]


@app.command("list")
def list_apps(
    limit: Limit = None, all_: All = False, cursor: Cursor = None, json_flag: JsonFlag = False
) -> None:
    """List Apps."""
    page = fetch_list(client(admin=True).apps, limit, cursor, all_)
    show_list(page, FIELDS, json_flag=json_flag, empty="no apps")


@keys.command("list")
def list_keys(
    app_id: AppId, limit: Limit = None, all_: All = False, cursor: Cursor = None, json_flag: JsonFlag = False
) -> None:
    """List an App's API keys, newest first: id, prefix, created, last used (never the key itself)."""
    page = fetch_list(client(admin=True).apps.keys, limit, cursor, all_, app_id)
    show_list(page, KEY_COLUMNS, json_flag=json_flag, empty="no api keys")


@keys.command("create")
def create_key(
    app_id: AppId,
    name: Annotated[str | None, typer.Option(help="What the key is for, e.g. billing-service.")] = None,
    json_flag: JsonFlag = False,
) -> None:
    """Create an API key for an App; the key is printed once, so store it."""
    created = client(admin=True).apps.keys.create(app_id, name=name)
    if want_json(json_flag):
        output.print_json(created)
        return
    output.print_detail(created["key"], KEY_COLUMNS)
    output.print_secret("api_key", created["api_key"])


@keys.command("rotate")
def rotate_key(
    app_id: AppId,
    key_id: KeyId,
    grace_period: Annotated[
        str,
        typer.Option(
            "--grace-period", help="How long the old key keeps working: 90s, 15m, 24h, 7d (0 = stop it now)."
        ),
    ] = "24h",
    json_flag: JsonFlag = False,
) -> None:
    """Replace an API key: the new key is printed once; the old one works until the grace period ends."""
    rotated = client(admin=True).apps.keys.rotate(
        app_id, key_id, grace_period_sec=parse_duration(grace_period)
    )
    if want_json(json_flag):
        output.print_json(rotated)
        return
    output.print_detail(rotated["key"], KEY_COLUMNS)
    output.print_secret("api_key", rotated["api_key"])
    previous = rotated.get("previous")
    until = f"until {previous.get('expires_at')}" if previous else "no longer (revoked now)"
    output.console().print(f"the old key {key_id} works {until}", markup=False)


@keys.command("revoke")
def revoke_key(app_id: AppId, key_id: KeyId, json_flag: JsonFlag = False) -> None:
    """Revoke an API key: once this returns (about 10 s), every request that carries it is refused (401)."""
    revoked = client(admin=True).apps.keys.revoke(app_id, key_id)
    if want_json(json_flag):
        output.print_json({**revoked, "revoked": True})
        return
    output.console().print(f"revoked {revoked.get('prefix')}… ({key_id})", markup=False)


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
