"""A fan-out message is exactly one of four kinds, each with the fields it needs. Messages that name
their `kind` and messages of an earlier version, which name none, parse to the same kind; a body that
fits no kind is refused (its record fails and, after its receive limit, goes to the DLQ)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from edgecron.schemas.messages import EventPage, FanoutBody, FireGate, FirePage, ScheduleWindow

BODY: TypeAdapter[FanoutBody] = TypeAdapter(FanoutBody)
A, E, S = "app_a", "evt_e", "sch_s"


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"event_id": E, "app_id": A, "cursor": None, "page": 0}, EventPage),
        ({"schedule_id": S, "fire_at": 60_000, "app_id": A, "cursor": None, "page": 2}, FirePage),
        ({"schedule_id": S, "app_id": A, "dispatch_until": 70_000}, ScheduleWindow),
        ({"schedule_id": S, "fire_at": 60_000, "app_id": A, "gate": True}, FireGate),
        ({"schedule_id": S, "fire_at": 60_000, "app_id": A, "gate": False}, FirePage),
    ],
)
def test_a_message_without_a_kind_is_read_by_its_fields(body: dict[str, Any], kind: type) -> None:
    parsed = BODY.validate_json(json.dumps(body))
    assert type(parsed) is kind
    again = BODY.validate_json(parsed.model_dump_json())  # as this release sends it: with its kind
    assert again == parsed and json.loads(parsed.model_dump_json())["kind"] == parsed.kind


def test_a_gate_keeps_its_gate_flag_for_a_release_that_reads_no_kind() -> None:
    sent = json.loads(FireGate(app_id=A, schedule_id=S, fire_at=60_000).model_dump_json())
    assert sent["gate"] is True and "event_id" not in sent and "dispatch_until" not in sent


def test_a_first_page_without_a_cursor_is_page_zero_and_one_with_a_cursor_asks_the_recorded_pages() -> None:
    assert BODY.validate_json(json.dumps({"event_id": E, "app_id": A})).page == 0  # type: ignore[union-attr]
    later = BODY.validate_json(json.dumps({"event_id": E, "app_id": A, "cursor": "ep_9"}))
    assert isinstance(later, EventPage) and later.page is None


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "bogus", "event_id": E, "app_id": A},
        {"kind": "fire_gate", "event_id": E, "app_id": A},  # a gate names a Fire
        {"kind": "event_page", "schedule_id": S, "fire_at": 1, "app_id": A},
        {"kind": 5, "event_id": E, "app_id": A},
        {"schedule_id": S, "app_id": A},  # a Fire's page without its fire time
        {"app_id": A, "cursor": None},
        {"event_id": E},
    ],
)
def test_a_body_that_fits_no_kind_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        BODY.validate_json(json.dumps(body))
