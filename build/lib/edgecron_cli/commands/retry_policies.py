"""`edgecron retry-policies`: how failed deliveries are retried."""

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
    client,
    fetch_list,
    show_deleted,
    show_list,
    show_one,
)

app = Group("retry-policies", "Retry Policies: how failed deliveries are retried.")

COLUMNS: list[output.Column] = [
    ("id", "id"),
    ("name", "name"),
    ("strategy", "strategy"),
    ("max_attempts", "max_attempts"),
    ("base_delay_sec", "base_delay_sec"),
    ("max_delay_sec", "max_delay_sec"),
    ("jitter", "jitter"),
]
FIELDS: list[output.Column] = [*COLUMNS, ("created_at", "created_at"), ("updated_at", "updated_at")]

Name = Annotated[str | None, typer.Option(help="A name.")]
Strategy = Annotated[str | None, typer.Option(help="fixed (default), linear or exponential.")]
MaxAttempts = Annotated[int | None, typer.Option(help="Attempts including the first, 1-20 (default 3).")]
BaseDelay = Annotated[int | None, typer.Option(help="Seconds before the first retry (default 300).")]
MaxDelay = Annotated[int | None, typer.Option(help="Upper bound of any delay, seconds (default 3600).")]
Jitter = Annotated[bool | None, typer.Option("--jitter/--no-jitter", help="Randomize delays.")]
PolicyId = Annotated[str, typer.Argument(help="Retry Policy id.")]


def _body(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


@app.command("create")
def create(
    name: Name = None,
    strategy: Strategy = None,
    max_attempts: MaxAttempts = None,
    base_delay_sec: BaseDelay = None,
    max_delay_sec: MaxDelay = None,
    jitter: Jitter = None,
    idempotency_key: IdempotencyKey = None,
    json_flag: JsonFlag = False,
) -> None:
    """Create a Retry Policy (unset fields take the API's defaults)."""
    body = _body(
        name=name,
        strategy=strategy,
        max_attempts=max_attempts,
        base_delay_sec=base_delay_sec,
        max_delay_sec=max_delay_sec,
        jitter=jitter,
    )
    show_one(
        client().retry_policies.create(body, idempotency_key=idempotency_key), FIELDS, json_flag=json_flag
    )


@app.command("list")
def list_(limit: Limit = None, all_: All = False, cursor: Cursor = None, json_flag: JsonFlag = False) -> None:
    """List Retry Policies."""
    page = fetch_list(client().retry_policies, limit, cursor, all_)
    show_list(page, COLUMNS, json_flag=json_flag, empty="no retry policies")


@app.command("get")
def get(policy_id: PolicyId, json_flag: JsonFlag = False) -> None:
    """Show a Retry Policy (`default` is the built-in one: 3 attempts, fixed 300 s)."""
    show_one(client().retry_policies.get(policy_id), FIELDS, json_flag=json_flag)


@app.command("update")
def update(
    policy_id: PolicyId,
    name: Name = None,
    strategy: Strategy = None,
    max_attempts: MaxAttempts = None,
    base_delay_sec: BaseDelay = None,
    max_delay_sec: MaxDelay = None,
    jitter: Jitter = None,
    json_flag: JsonFlag = False,
) -> None:
    """Change a Retry Policy; only the flags given are sent (PATCH)."""
    changes = _body(
        name=name,
        strategy=strategy,
        max_attempts=max_attempts,
        base_delay_sec=base_delay_sec,
        max_delay_sec=max_delay_sec,
        jitter=jitter,
    )
    if not changes:
        raise typer.BadParameter("nothing to change: give at least one option", param_hint="options")
    show_one(client().retry_policies.update(policy_id, changes), FIELDS, json_flag=json_flag)


@app.command("delete")
def delete(policy_id: PolicyId, json_flag: JsonFlag = False) -> None:
    """Delete a Retry Policy (409 while an Endpoint or Schedule uses it)."""
    client().retry_policies.delete(policy_id)
    show_deleted("retry policy", policy_id, json_flag=json_flag)
