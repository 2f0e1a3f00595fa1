"""`edgecron mcp`: the MCP server on standard input and output, with the configured App key."""

from __future__ import annotations

import typer

from edgecron_cli.commands._common import client, handled


@handled
def mcp() -> None:
    """Serve the Model Context Protocol on stdin/stdout for an AI agent: create, inspect, pause and
    resume schedules, list fires and runs, send runs, replay dead letters, for the configured App key
    only (never the admin key). Register it in an agent as the command `edgecron mcp`."""
    app_client = client()  # the App key: ConfigError (exit 2) when there is none
    try:
        from edgecron_cli.mcp_server import build_server
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != "mcp":
            raise
        typer.echo(
            "edgecron mcp: the mcp package is missing: pip install 'edgecron[mcp]' "
            "(or 'edgecron-client[cli,mcp]')",
            err=True,
        )
        raise typer.Exit(2) from None
    build_server(app_client).run("stdio")
