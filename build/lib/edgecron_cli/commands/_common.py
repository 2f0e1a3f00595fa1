"""What every client command shares: global options, the configured client, flag types, error handling.

Commands stay thin (parse flags, call the client, print); `Group` wraps each of them so that an API
error, a network failure or missing configuration ends in one stderr line and a documented exit code.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from edgecron_cli import output
from edgecron_cli.client import EXIT_USAGE, ApiError, Client, TransportError, exit_code
from edgecron_cli.config import ConfigError, resolve

CommandFunc = Callable[..., Any]


@dataclass(frozen=True)
class GlobalOptions:
    """The root options (`edgecron --url U --api-key K --admin-key A --json <group> <command>`)."""

    url: str | None = None
    api_key: str | None = None
    admin_key: str | None = None
    json: bool = False


# Set by the root callback, which runs before any command of the same invocation.
_options: ContextVar[GlobalOptions | None] = ContextVar("edgecron_cli_options", default=None)


def _root_options() -> GlobalOptions:
    return _options.get() or GlobalOptions()


def root_callback(
    url: Annotated[
        str | None,
        typer.Option("--url", help="API base URL (else env EDGECRON_URL, else .edgecron/local.json)."),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", help="App API key (else env EDGECRON_API_KEY, else local.json)."),
    ] = None,
    admin_key: Annotated[
        str | None,
        typer.Option(
            "--admin-key", help="Admin key for `apps` (else env EDGECRON_ADMIN_KEY, else local.json)."
        ),
    ] = None,
    json_: Annotated[
        bool, typer.Option("--json", help="Print raw JSON (same as --json on a command).")
    ] = False,
) -> None:
    """EdgeCron command-line tool: `edgecron local` runs the stack, the other commands call its API."""
    _options.set(GlobalOptions(url=url, api_key=api_key, admin_key=admin_key, json=json_))


def client(*, admin: bool = False) -> Client:
    """A client for the configured API, with the admin key for `apps` commands, else the App key."""
    opts = _root_options()
    settings = resolve(url=opts.url, api_key=opts.api_key, admin_key=opts.admin_key)
    url = settings.require_url()
    key = settings.require_admin_key() if admin else settings.require_api_key()
    return Client(url, key)


def want_json(flag: bool) -> bool:
    return flag or _root_options().json


def handled[F: CommandFunc](func: F) -> F:
    """Turn the client's failures into `error: ...` on stderr and the documented exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ApiError as exc:
            output.print_error(output.error_line(exc))
            raise typer.Exit(exit_code(exc)) from None
        except TransportError as exc:
            output.print_error(f"error: {exc}")
            raise typer.Exit(exit_code(exc)) from None
        except ConfigError as exc:
            output.print_error(f"error: {exc}")
            raise typer.Exit(EXIT_USAGE) from None

    return wrapper  # type: ignore[return-value]


class Group(typer.Typer):
    """A command group whose commands all go through `handled`."""

    def __init__(self, name: str, help: str) -> None:
        super().__init__(name=name, help=help, no_args_is_help=True)

    def command[F: CommandFunc](self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        register = super().command(*args, **kwargs)

        def decorator(func: F) -> F:
            register(handled(func))
            return func

        return decorator


# -- shared flags ---------------------------------------------------------------------------------------

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the raw JSON response (for scripts).")]
Limit = Annotated[
    int | None,
    typer.Option(min=1, max=100, help="Page size (1-100; the API's default is 20, with --all 100)."),
]
All = Annotated[bool, typer.Option("--all", help="Follow next_cursor to the last page.")]
Cursor = Annotated[str | None, typer.Option(help="Start at this next_cursor of an earlier page.")]
Payload = Annotated[
    str | None,
    typer.Option(help="JSON value, or @file with one ('@-' reads stdin)."),
]
IdempotencyKey = Annotated[
    str | None, typer.Option(help="Idempotency-Key header: a retry with the same key creates nothing new.")
]


def parse_json_value(value: str, flag: str = "--payload") -> Any:
    """A JSON value given inline or as @file; bad JSON is a usage error (exit 2)."""
    text = value
    if value.startswith("@"):
        source = value[1:]
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise typer.BadParameter(f"cannot read {source}: {exc.strerror}", param_hint=flag) from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint=flag) from exc


def parse_headers(values: list[str]) -> dict[str, str]:
    """`Name: value` pairs (repeatable --header) into a dict."""
    headers: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise typer.BadParameter(f"{item!r} is not 'Name: value'", param_hint="--header")
        headers[name.strip()] = value.strip()
    return headers


def fetch_list(
    listing: Any, limit: int | None, cursor: str | None, follow: bool, *args: Any, **filters: Any
) -> dict[str, Any]:
    """One page as the API sent it, or with `follow` (--all) every page merged into `{"data": [...]}`.

    `listing` is a list route of the client library (its `list` and `pages`, e.g. `api.endpoints`)."""
    if not follow:
        page: dict[str, Any] = listing.list(*args, limit=limit, cursor=cursor, **filters)
        return page
    data: list[Any] = []
    for page in listing.pages(*args, limit=limit, cursor=cursor, **filters):
        data.extend(page.get("data") or [])
    return {"data": data}


def show_list(page: Mapping[str, Any], columns: list[output.Column], *, json_flag: bool, empty: str) -> None:
    if want_json(json_flag):
        output.print_json(page)
    else:
        output.print_list(page, columns, empty=empty)


def show_one(obj: Mapping[str, Any], fields: list[output.Column] | None, *, json_flag: bool) -> None:
    if want_json(json_flag):
        output.print_json(obj)
    else:
        output.print_detail(obj, fields)


def show_deleted(kind: str, obj_id: str, *, json_flag: bool) -> None:
    """DELETE answers 204 with no body; scripts still get one JSON object to parse."""
    if want_json(json_flag):
        output.print_json({"id": obj_id, "deleted": True})
    else:
        output.console().print(f"deleted {kind} {obj_id}", markup=False)
