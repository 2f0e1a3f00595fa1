"""EventBridge Scheduler expressions through the API: a schedule keeps the expression as given,
shows what it runs as (cron_equivalent) and its real next fire times; one that cannot be represented
is a 400 that says why, and nothing is stored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from edgecron import clock
from edgecron_testing.harness import call_api
from edgecron_testing.harness import new_endpoint as endpoint

T0 = datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC)  # a Monday


@pytest.fixture
def fixed() -> clock.FixedClock:
    c = clock.FixedClock(T0)
    clock.set_clock(c)
    return c


FORMS = [
    (
        "cron(0 9 ? * MON-FRI *)",
        "Europe/Berlin",
        "0 9 * * MON-FRI",
        ["2026-06-02T07:00:00.000Z", "2026-06-03T07:00:00.000Z", "2026-06-04T07:00:00.000Z"],
    ),
    (
        "cron(15 10 ? * 6L 2026-2027)",
        "UTC",
        "15 10 * * L5 (years 2026-2027)",
        ["2026-06-26T10:15:00.000Z", "2026-07-31T10:15:00.000Z", "2026-08-28T10:15:00.000Z"],
    ),
    (
        "rate(5 minutes)",
        "UTC",
        "*/5 * * * *",
        ["2026-06-01T12:05:00.000Z", "2026-06-01T12:10:00.000Z", "2026-06-01T12:15:00.000Z"],
    ),
    (
        "rate(1 day)",
        "Asia/Tokyo",
        "0 0 * * *",
        ["2026-06-01T15:00:00.000Z", "2026-06-02T15:00:00.000Z", "2026-06-03T15:00:00.000Z"],
    ),
    ("at(2027-01-01T09:00:00)", "America/New_York", "0 0 9 1 1 * (year 2027)", ["2027-01-01T14:00:00.000Z"]),
]


@pytest.mark.parametrize(("expression", "zone", "shown", "fires"), FORMS, ids=[f[0] for f in FORMS])
def test_a_schedule_in_eventbridge_form_keeps_it_and_fires_as_shown(
    app_key: str, fixed: clock.FixedClock, expression: str, zone: str, shown: str, fires: list[str]
) -> None:
    ep = endpoint(app_key)
    body = {"cron": expression, "timezone": zone, "endpoint_ids": [ep]}
    created = call_api("POST", "/v1/schedules", key=app_key, body=body)
    assert created.status == 201, created.body
    s = created.body
    assert (s["cron"], s["cron_equivalent"], s["next_fire_time"]) == (expression, shown, fires[0])
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=app_key, query={"preview": "3"}).body
    assert got["cron"] == expression and got["preview"] == fires


def test_a_plain_cron_has_no_equivalent(app_key: str, fixed: clock.FixedClock) -> None:
    s = call_api("POST", "/v1/schedules", key=app_key, body={"cron": "0 9 * * 1-5", "status": "PAUSED"}).body
    assert s["cron_equivalent"] is None


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("rate(7 minutes)", "rate(7 minutes) cannot be represented: EdgeCron aligns a rate to the clock"),
        ("cron(0 9 * * MON-FRI *)", "needs '?' in exactly one of day-of-month and day-of-week"),
        ("cron(0 9 ? * MON 2027,2029)", "year field '2027,2029' cannot be represented"),
        ("at(2026-06-01T11:00:00)", "at(2026-06-01T11:00:00) has no fire time left"),
        ("cron(0 9 ? * MON 2020-2025)", "its time in 2020-2025 has passed"),
        ("cron(*/90 * ? * MON *)", "step 90 is larger than the field's range"),
    ],
)
def test_an_expression_that_cannot_be_represented_is_a_400_that_says_why(
    app_key: str, fixed: clock.FixedClock, expression: str, reason: str
) -> None:
    resp = call_api("POST", "/v1/schedules", key=app_key, body={"cron": expression})
    assert resp.status == 400, resp.body
    assert resp.body["error"]["field"] == "cron" and reason in resp.body["error"]["message"], resp.body
    assert call_api("GET", "/v1/schedules", key=app_key).body["data"] == []


def test_a_patch_to_an_eventbridge_form_moves_the_next_fire(app_key: str, fixed: clock.FixedClock) -> None:
    s = call_api("POST", "/v1/schedules", key=app_key, body={"cron": "0 0 * * *"}).body
    path = f"/v1/schedules/{s['id']}"
    moved = call_api("PATCH", path, key=app_key, body={"cron": "rate(15 minutes)"})
    assert moved.status == 200, moved.body
    assert (moved.body["cron"], moved.body["cron_equivalent"]) == ("rate(15 minutes)", "*/15 * * * *")
    assert moved.body["next_fire_time"] == "2026-06-01T12:15:00.000Z"
    refused = call_api("PATCH", path, key=app_key, body={"cron": "at(2026-05-01T00:00:00)"})
    assert refused.status == 400 and refused.body["error"]["field"] == "cron", refused.body
    assert call_api("GET", path, key=app_key).body["cron"] == "rate(15 minutes)"
