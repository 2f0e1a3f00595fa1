"""docs/vocabulary.md lists exactly the values of each enum in domain/vocabulary.py."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

import pytest

from edgecron.domain import vocabulary as v

DOC = Path(__file__).resolve().parents[2] / "docs" / "vocabulary.md"

SECTIONS: dict[str, type[StrEnum]] = {
    "Task Run status": v.RunStatus,
    "Task Run source": v.Source,
    "Error kind": v.ErrorKind,
    "Fire status": v.FireStatus,
    "Schedule status": v.ScheduleStatus,
    "Missed policy": v.MissedPolicy,
    "Overlap policy": v.OverlapPolicy,
    "Fan-out status": v.FanoutStatus,
    "Retry strategy": v.RetryStrategy,
    "HTTP method": v.HttpMethod,
    "API key role": v.KeyRole,
    "Endpoint health": v.HealthState,
    "Disabled reason": v.DisabledReason,
    "Notification kind": v.NotificationKind,
    "Operational event": v.OperationalEvent,
}


def documented_values(title: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\b.*?\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, f"docs/vocabulary.md has no section '{title}'"
    return re.findall(r"^\| `([^`]+)` \|", match.group(1), flags=re.M)


@pytest.mark.parametrize("title", sorted(SECTIONS))
def test_the_documented_values_are_exactly_the_enum(title: str) -> None:
    assert documented_values(title) == [member.value for member in SECTIONS[title]]


def test_every_enum_of_the_vocabulary_is_documented() -> None:
    enums = {
        obj
        for obj in vars(v).values()
        if isinstance(obj, type) and issubclass(obj, StrEnum) and obj is not StrEnum
    }
    assert enums == set(SECTIONS.values())


CONSOLE = Path(__file__).resolve().parents[2] / "layers" / "core" / "edgecron" / "console" / "assets"
CONSOLE_LISTS: dict[str, type[StrEnum]] = {
    "RUN_STATUSES": v.RunStatus,
    "SOURCES": v.Source,
    "ERROR_KINDS": v.ErrorKind,
}


@pytest.mark.parametrize("name", sorted(CONSOLE_LISTS))
def test_the_consoles_filter_lists_offer_every_value(name: str) -> None:
    text = (CONSOLE / "page-runs.js").read_text(encoding="utf-8")
    match = re.search(rf"const {name} = \[(.*?)\];", text, flags=re.S)
    assert match, f"page-runs.js has no {name} list"
    offered = [value for value in re.findall(r'"([^"]*)"', match.group(1)) if value]
    assert offered == [member.value for member in CONSOLE_LISTS[name]]
