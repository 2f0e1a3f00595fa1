"""The CLI's output: table cells, tables and details, JSON for scripts, the error line, masking."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from edgecron_cli import output
from edgecron_cli.client import ApiError


def render(renderable: object, width: int = 200) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(renderable)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "-"),
        (True, "yes"),
        (False, "no"),
        (3, "3"),
        ("x", "x"),
        ([], "-"),
        (["a", "b"], "a, b"),
        ({"k": [1, 2]}, '{"k":[1,2]}'),
    ],
)
def test_cells(value: object, shown: str) -> None:
    assert output.cell(value) == shown


def test_payloads_keep_their_json_form() -> None:
    assert output.payload_of({"payload": [1, 2]}) == "[1,2]"
    assert output.payload_of({"payload": "text"}) == '"text"'
    assert output.payload_of({"payload": None}) == "-"


def test_table_has_headers_rows_and_computed_columns() -> None:
    rows = [{"id": "ep_1", "url": "http://a", "n": 1}, {"id": "ep_2", "url": "http://b", "n": 2}]
    text = render(output.table(rows, [("id", "id"), ("url", "url"), ("twice", lambda r: r["n"] * 2)]))
    lines = text.splitlines()
    assert "id" in lines[0] and "url" in lines[0] and "twice" in lines[0]
    assert any("ep_1" in line and "http://a" in line and "2" in line for line in lines)
    assert any("ep_2" in line and "http://b" in line and "4" in line for line in lines)


def test_values_are_never_read_as_rich_markup() -> None:
    text = render(output.table([{"e": "[bold]boom[/bold] [red]"}], [("error", "e")]))
    assert "[bold]boom[/bold] [red]" in text


def test_detail_lists_fields_in_order() -> None:
    text = render(output.detail({"b": 2, "a": None}))
    lines = [line.split() for line in text.splitlines() if line.strip()]
    assert lines == [["b", "2"], ["a", "-"]]


def test_header_values_are_masked_for_people() -> None:
    shown = output.masked_headers({"Authorization": "Bearer s3cret", "X-Team": "ops"})
    assert "s3cret" not in shown and "ops" not in shown
    assert "Authorization" in shown and "X-Team" in shown
    assert output.masked_headers({}) == "-"


def test_json_output_is_the_data_unchanged() -> None:
    buffer = io.StringIO()
    data = {"data": [{"id": "x", "payload": {"é": [1, None]}}], "next_cursor": None}
    output.print_json(data, buffer)
    assert json.loads(buffer.getvalue()) == data


def test_json_lines_are_one_object_per_line() -> None:
    buffer = io.StringIO()
    output.print_json_line({"attempt": {"n": 1}}, buffer)
    output.print_json_line({"run": {"status": "success"}}, buffer)
    assert [json.loads(line) for line in buffer.getvalue().splitlines()] == [
        {"attempt": {"n": 1}},
        {"run": {"status": "success"}},
    ]


def test_error_line_with_and_without_field() -> None:
    with_field = ApiError(400, "PARAM_INVALID", "must be at most 20", "retry_policy.max_attempts")
    assert output.error_line(with_field) == (
        "error: PARAM_INVALID: must be at most 20 (field: retry_policy.max_attempts)"
    )
    assert output.error_line(ApiError(404, "NOT_FOUND", "no such endpoint")) == (
        "error: NOT_FOUND: no such endpoint"
    )


def test_print_list_shows_rows_and_hints_the_next_page_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    buffer = io.StringIO()
    page = {"data": [{"id": "ep_1"}], "next_cursor": "abc"}
    output.print_list(page, [("id", "id")], empty="none", out=Console(file=buffer, width=100))
    assert "ep_1" in buffer.getvalue()
    assert "--cursor abc" in capsys.readouterr().err


def test_print_list_says_when_empty() -> None:
    buffer = io.StringIO()
    output.print_list(
        {"data": [], "next_cursor": None}, [("id", "id")], empty="no endpoints", out=Console(file=buffer)
    )
    assert buffer.getvalue().strip() == "no endpoints"


def test_piped_output_is_not_folded_at_80_columns() -> None:
    buffer = io.StringIO()
    console = output.console(buffer)
    assert not console.is_terminal
    long_url = "http://127.0.0.1:3000/" + "x" * 150
    console.print(output.table([{"id": "ep_1", "url": long_url}], [("id", "id"), ("url", "url")]))
    assert long_url in buffer.getvalue()
