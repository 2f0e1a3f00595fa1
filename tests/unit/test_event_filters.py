"""Event names and filter_events matching (domain/event_filters.py)."""

from __future__ import annotations

import re

import pytest

from edgecron.domain.event_filters import (
    MAX_NAME_LENGTH,
    is_valid_name,
    is_valid_pattern,
    matches,
    matches_any,
    validate_name,
)
from edgecron.schemas.endpoints import _EVENT_PATTERN


@pytest.mark.parametrize(
    "name",
    ["invoice.paid", "user.created", "deploy", "a.b.c.d", "A_b-9.x", "x" * MAX_NAME_LENGTH, "1.2"],
)
def test_valid_names(name: str) -> None:
    assert is_valid_name(name)
    assert validate_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "x" * (MAX_NAME_LENGTH + 1),
        "invoice.",
        ".paid",
        "invoice..paid",
        "invoice.*",
        "*",
        "invoice paid",
        "invoice/paid",
        "facture.payée",
        "invoice.paid\n",
        " invoice.paid",
    ],
)
def test_invalid_names(name: str) -> None:
    assert not is_valid_name(name)
    with pytest.raises(ValueError):
        validate_name(name)


def test_non_strings_are_not_names() -> None:
    assert not is_valid_name(None)
    assert not is_valid_name(42)


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("invoice.paid", "invoice.paid", True),
        ("invoice.paid", "invoice.paid.late", False),
        ("invoice.paid", "invoice", False),
        ("invoice.paid", "Invoice.paid", False),  # case-sensitive
        ("invoice.*", "invoice.paid", True),
        ("invoice.*", "invoice.created", True),
        ("invoice.*", "invoice.paid.late", False),
        ("invoice.*", "invoice", False),
        ("invoice.*", "invoices.paid", False),
        ("invoice.*", "user.created", False),
        ("invoice.*.*", "invoice.paid.late", True),
        ("invoice.*.*", "invoice.paid", False),
        ("a.*.c", "a.b.c", True),
        ("a.*.c", "a.b.d", False),
        ("a.*.c", "a.c", False),
        ("*.paid", "invoice.paid", True),  # a leading * segment: refused by the schema, but consistent
        ("*", "invoice.paid", True),
        ("*", "deploy", True),
        ("*", "a.b.c.d.e", True),
        ("user.created", "user.created", True),
        ("user.created", "user.deleted", False),
    ],
)
def test_matches(pattern: str, name: str, expected: bool) -> None:
    assert matches(pattern, name) is expected


def test_empty_filter_list_receives_nothing() -> None:
    assert not matches_any([], "invoice.paid")
    assert not matches_any(None, "invoice.paid")


def test_any_pattern_of_the_list_is_enough() -> None:
    assert matches_any(["user.created", "invoice.*"], "invoice.paid")
    assert not matches_any(["user.created", "invoice.*"], "user.deleted")
    assert matches_any(["user.created", "*"], "anything.at.all")


@pytest.mark.parametrize(
    "pattern", ["*", "invoice.*", "invoice.paid", "a.*.c", "invoice.*.*", "deploy", "x" * MAX_NAME_LENGTH]
)
def test_valid_patterns_agree_with_the_endpoint_schema(pattern: str) -> None:
    assert is_valid_pattern(pattern)
    assert re.match(_EVENT_PATTERN, pattern)


@pytest.mark.parametrize(
    "pattern",
    ["", "**", "invoice.**", "inv*", "invoice.pa*", "*.paid", "invoice.", ".*", "x" * (MAX_NAME_LENGTH + 1)],
)
def test_invalid_patterns_agree_with_the_endpoint_schema(pattern: str) -> None:
    assert not is_valid_pattern(pattern)
    if len(pattern) <= MAX_NAME_LENGTH:
        assert not re.match(_EVENT_PATTERN, pattern)


def test_every_valid_name_is_a_pattern_matching_only_itself() -> None:
    for name in ["invoice.paid", "deploy", "a.b.c"]:
        assert is_valid_pattern(name)
        assert matches(name, name)
        assert not matches(name, name + ".x")
