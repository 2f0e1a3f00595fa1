"""The API client command groups of `edgecron`, registered on the root typer app by `register`."""

from __future__ import annotations

import typer

from edgecron_cli.commands import (
    account,
    apps,
    dead_letters,
    endpoints,
    events,
    retry_policies,
    runs,
    schedules,
)
from edgecron_cli.commands._common import root_callback

__all__ = ["register", "root_callback"]


def register(app: typer.Typer) -> None:
    """Add every client command group (and `usage`) to the root app."""
    for group in (
        apps.app,
        endpoints.app,
        retry_policies.app,
        schedules.app,
        events.app,
        runs.app,
        dead_letters.app,
        account.notifications,
    ):
        app.add_typer(group)
    app.command("usage")(account.usage)
