"""The `edgecron` typer app; each command group is registered here (`local`, and the API client groups)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from edgecron_cli import commands
from edgecron_cli.commands import listen, mcp

# What only `edgecron local` imports: the `local` extra of the package (pyproject.toml).
LOCAL_ONLY_MODULES = frozenset({"moto", "yaml", "samtranslator", "werkzeug", "flask"})

app = typer.Typer(
    name="edgecron", help="EdgeCron: scheduled and event-driven webhooks.", no_args_is_help=True
)


# The client commands: global --url/--api-key/--admin-key/--json, then one group per API resource.
main = app.callback()(commands.root_callback)
commands.register(app)
app.command("listen")(listen.listen)
app.command("mcp")(mcp.mcp)


@app.command()
def local(
    port: Annotated[int, typer.Option(help="Port of the HTTP API (0 = a free port).")] = 3000,
    aws_port: Annotated[
        int, typer.Option(help="Port of the moto server (AWS APIs; 0 = a free port).")
    ] = 4567,
    state_dir: Annotated[
        Path | None, typer.Option(help="Where state.json and local.json live (default: <root>/.edgecron).")
    ] = None,
    concurrency: Annotated[
        int, typer.Option(min=1, help="API containers, and pollers per SQS event source.")
    ] = 4,
    root: Annotated[
        Path | None,
        typer.Option(
            help="Repository with template.yaml (default: the nearest one from the cwd up, else this checkout)."
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Handler logs at INFO, access lines, metrics.")
    ] = False,
) -> None:
    """Run the whole stack on this machine: moto for AWS, the handlers in-process, no Docker, no account."""
    # Imported here: the client commands need neither moto nor the time to import it.
    try:
        from edgecron_cli.local.stack import StackOptions, StartupError, default_root, run_local_stack
    except ModuleNotFoundError as exc:
        if exc.name in {"edgecron", "edgecron_cli.local"} or (exc.name or "").startswith("edgecron."):
            typer.echo(  # the edgecron-client distribution: the command without the server core
                "edgecron local: the local stack needs the EdgeCron server package; from a checkout of "
                "the repository: pip install '.[local]'",
                err=True,
            )
            raise typer.Exit(2) from None
        if exc.name is None or exc.name.split(".")[0] not in LOCAL_ONLY_MODULES:
            raise
        typer.echo(
            f"edgecron local: the local emulator is not installed ({exc.name} is missing); "
            "install it with: pip install 'edgecron[local]'",
            err=True,
        )
        raise typer.Exit(2) from None

    try:
        repo = (root or default_root()).resolve()
    except StartupError as exc:
        typer.echo(f"edgecron local: {exc}", err=True)
        raise typer.Exit(2) from exc
    options = StackOptions(
        root=repo,
        state_dir=(state_dir or repo / ".edgecron").resolve(),
        port=port,
        aws_port=aws_port,
        concurrency=concurrency,
        verbose=verbose,
    )
    raise typer.Exit(run_local_stack(options))


if __name__ == "__main__":
    app()
