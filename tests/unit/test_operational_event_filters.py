"""Operational events (``edgecron.*``) reach only Endpoints that name them; users cannot publish them."""

from __future__ import annotations

import pytest

from edgecron.domain.event_filters import is_operational, matches, matches_any, validate_name
from edgecron.domain.vocabulary import OperationalEvent

NAMES = [member.value for member in OperationalEvent]


@pytest.mark.parametrize("name", NAMES)
def test_every_operational_event_is_under_the_edgecron_prefix(name: str) -> None:
    assert is_operational(name)


@pytest.mark.parametrize("name", NAMES)
def test_a_plain_star_does_not_match_them_and_edgecron_star_matches_all(name: str) -> None:
    assert not matches("*", name)
    assert matches("edgecron.*", name)
    assert matches(name, name)


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("edgecron.endpoint.*", "edgecron.endpoint.disabled", True),
        ("edgecron.endpoint.*", "edgecron.run.dead_lettered", False),
        ("edgecron.*.failing", "edgecron.endpoint.failing", True),
        ("edgecron.run.dead_lettered", "edgecron.run.dead_lettered", True),
        ("edgecron.*", "invoice.paid", False),
        ("*", "invoice.paid", True),
    ],
)
def test_other_patterns_match_as_usual(pattern: str, name: str, expected: bool) -> None:
    assert matches(pattern, name) is expected


def test_an_endpoint_with_star_and_edgecron_star_gets_both_kinds() -> None:
    assert matches_any(["*", "edgecron.*"], "edgecron.fire.missed")
    assert matches_any(["*"], "order.paid") and not matches_any(["*"], "edgecron.fire.missed")


@pytest.mark.parametrize("name", ["edgecron.endpoint.disabled", "edgecron.custom"])
def test_users_cannot_publish_under_the_edgecron_prefix(name: str) -> None:
    with pytest.raises(ValueError, match="EdgeCron's own"):
        validate_name(name)


def test_names_that_only_start_alike_are_the_users() -> None:
    assert validate_name("edgecronx.paid") == "edgecronx.paid"
    assert not is_operational("edgecron")
