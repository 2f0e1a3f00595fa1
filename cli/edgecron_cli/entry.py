"""The `edgecron` command of the edgecron-client distribution, whose command-line packages (typer,
rich, requests) are its `cli` extra: without them it says what to install instead of a traceback."""

from __future__ import annotations

import sys

CLI_MODULES = frozenset({"typer", "rich", "requests", "click"})


def main() -> None:
    try:
        from edgecron_cli.main import app
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] not in CLI_MODULES:
            raise
        print(
            f"edgecron: the command needs the cli extra ({exc.name} is missing): "
            "pip install 'edgecron-client[cli]'",
            file=sys.stderr,
        )
        sys.exit(2)
    app()
