"""What the CLI prints: rich tables for people, the API's JSON unchanged for scripts, errors on stderr.

Every value from the API goes into a `rich.text.Text`, so brackets in a URL or an error message are
never read as rich markup. JSON goes straight to stdout (no rich wrapping) so it always parses.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from edgecron_cli.client import ApiError

Row = Mapping[str, Any]
Getter = Callable[[Row], Any]
Column = tuple[str, str | Getter]

MASK = "•••"


PIPE_WIDTH = 400  # when not a terminal: wide enough that ids and URLs are never folded


def _console(file: TextIO) -> Console:
    probe = Console(file=file)
    width = None if probe.is_terminal else PIPE_WIDTH
    return Console(file=file, highlight=False, width=width)


def console(file: TextIO | None = None) -> Console:
    """A console on stdout (or `file`), without rich's 80-column default when piped."""
    return _console(file or sys.stdout)


def err_console() -> Console:
    return _console(sys.stderr)


def print_json(data: Any, file: TextIO | None = None) -> None:
    out = file or sys.stdout
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    out.flush()


def print_json_line(data: Any, file: TextIO | None = None) -> None:
    """One compact JSON object per line (NDJSON), for streams such as `runs watch --json`."""
    out = file or sys.stdout
    out.write(json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n")
    out.flush()


def cell(value: Any) -> str:
    """A table cell: '-' for null, yes/no for booleans, lists joined, objects as compact JSON."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(cell(v) for v in value) if value else "-"
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def json_text(value: Any) -> str:
    """A JSON value (a payload) shown as compact JSON, so a list or a string keeps its JSON form."""
    return "-" if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def payload_of(row: Row) -> str:
    return json_text(row.get("payload"))


def _get(row: Row, spec: str | Getter) -> Any:
    return spec(row) if callable(spec) else row.get(spec)


def table(rows: Iterable[Row], columns: Sequence[Column], title: str | None = None) -> Table:
    t = Table(title=title, show_edge=False, header_style="bold", pad_edge=False)
    for index, (header, _) in enumerate(columns):
        t.add_column(header, no_wrap=index == 0, overflow="fold")
    for row in rows:
        t.add_row(*(Text(cell(_get(row, spec))) for _, spec in columns))
    return t


def detail(obj: Row, fields: Sequence[Column] | None = None) -> Table:
    """One object as two columns, field and value (every field when `fields` is None)."""
    t = Table(show_header=False, show_edge=False, box=None, pad_edge=False)
    t.add_column("field", style="bold", no_wrap=True)
    t.add_column("value", overflow="fold")
    for name, spec in fields or [(k, k) for k in obj]:
        t.add_row(Text(name), Text(cell(_get(obj, spec))))
    return t


def print_list(
    page: Row,
    columns: Sequence[Column],
    *,
    empty: str,
    out: Console | None = None,
) -> None:
    """A page (or every page) as a table; a hint on stderr when there is a next page."""
    rows = page.get("data") or []
    out = out or console()
    if not rows:
        out.print(Text(empty))
    else:
        out.print(table(rows, columns))
    cursor = page.get("next_cursor")
    if cursor:
        err_console().print(Text(f"more: --cursor {cursor} (or --all)", style="dim"))


def print_detail(obj: Row, fields: Sequence[Column] | None = None, out: Console | None = None) -> None:
    (out or console()).print(detail(obj, fields))


def print_secret(name: str, value: str, out: Console | None = None) -> None:
    """A secret the API shows once (endpoint secret, App API key), with a reminder to keep it."""
    out = out or console()
    out.print(Text.assemble((f"{name}: ", "bold"), value))
    out.print(Text(f"(shown once: store the {name} now; EdgeCron keeps only a hash or ciphertext)", "dim"))


def masked_headers(headers: dict[str, str] | None) -> str:
    """Endpoint headers for people: names only, values masked (they often carry tokens)."""
    if not headers:
        return "-"
    return ", ".join(f"{name}: {MASK}" for name in headers)


def error_line(error: ApiError) -> str:
    """`error: CODE: message (field: x)`, the one line a failing command prints on stderr."""
    return f"error: {error}"


def print_error(message: str) -> None:
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.stderr.flush()
