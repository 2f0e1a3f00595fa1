"""Schedule controls: a pause keeps its reason until resumed (an auto-pause records the failures
and the last error), validated strictly."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock
from edgecron.data import schedules as schedule_data
from edgecron_testing.harness import call_api, invoke
from edgecron_testing.harness import new_endpoint as endpoint
from edgecron_testing.harness import new_schedule as schedule
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump, new_app

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def fixed() -> clock.FixedClock:
    c = clock.FixedClock(T0)
    clock.set_clock(c)
    return c


def test_a_pause_keeps_its_reason_until_resume(fixed: clock.FixedClock) -> None:
    app_id, app_key = new_app("pause-reason")
    s = schedule(app_key, cron="0 3 * * *")
    assert s["pause_reason"] is None
    paused = call_api("POST", f"/v1/schedules/{s['id']}/pause", key=app_key, body={"reason": "maintenance"})
    assert paused.status == 200, paused.body
    assert paused.body["status"] == "PAUSED" and paused.body["pause_reason"] == "maintenance"
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=app_key).body
    assert got["pause_reason"] == "maintenance"
    again = call_api("POST", f"/v1/schedules/{s['id']}/pause", key=app_key, body={"reason": "db move"})
    assert again.body["pause_reason"] == "db move"
    kept = call_api("POST", f"/v1/schedules/{s['id']}/pause", key=app_key)  # no body: the reason stays
    assert kept.status == 200 and kept.body["pause_reason"] == "db move"
    resumed = call_api("POST", f"/v1/schedules/{s['id']}/resume", key=app_key).body
    assert resumed["status"] == "ACTIVE" and resumed["pause_reason"] is None
    stored = schedule_data.get_timed(app_id, s["id"])
    assert stored is not None and stored.pause_reason is None
    bare = call_api("POST", f"/v1/schedules/{s['id']}/pause", key=app_key)
    assert bare.status == 200 and bare.body["status"] == "PAUSED" and bare.body["pause_reason"] is None


@pytest.mark.parametrize(
    "body",
    [{"reason": "x" * 501}, {"reason": 7}, {"why": "typo"}, {"reason": "ok", "extra": 1}],
)
def test_a_bad_pause_body_is_a_400_and_leaves_the_schedule_active(app_key: str, body: dict[str, Any]) -> None:
    s = schedule(app_key, cron="0 3 * * *")
    resp = call_api("POST", f"/v1/schedules/{s['id']}/pause", key=app_key, body=body)
    assert resp.status == 400, resp.body
    assert set(resp.body["error"]) >= {"code", "message", "field"}
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=app_key).body
    assert got["status"] == "ACTIVE" and got["pause_reason"] is None


def test_a_reason_of_500_characters_is_kept_whole(app_key: str) -> None:
    s = schedule(app_key, cron="0 3 * * *")
    reason = "é" * 500
    resp = call_api("POST", f"/v1/schedules/{s['id']}/pause", key=app_key, body={"reason": reason})
    assert resp.status == 200 and resp.body["pause_reason"] == reason


def test_an_auto_pause_records_the_failures_and_last_error_as_its_reason(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("pause-reason")
    receiver.script("/fail", Reply(503))
    policy = call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 1}).body["id"]
    ep = endpoint(key, receiver.url("/fail"), retry_policy_id=policy)
    ops = endpoint(key, receiver.url("/ops"), filter_events=["edgecron.schedule.*"])
    fixed.set(T0 - timedelta(minutes=2))
    s = schedule(key, cron="0 1,3,5 12 * * *", endpoint_ids=[ep], name="nightly")
    for minute in (1, 3, 5):
        fixed.set(T0.replace(minute=minute))
        invoke("scan", {"detail": {}})
        pump.deliveries()
    for _ in range(3):  # the operational event is an Event fanned out to its Endpoint
        while pump.once("FanoutQueue", "fanout", batch=1):
            pass
        pump.deliveries()
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=key).body
    assert got["status"] == "PAUSED"
    reason = got["pause_reason"]
    assert reason.startswith("3 fires in a row failed: ") and "503" in reason
    notes = call_api("GET", "/v1/notifications", key=key).body["data"]
    assert notes[0]["kind"] == "SCHEDULE_AUTO_PAUSED" and notes[0]["data"]["pause_reason"] == reason
    events = [json.loads(r.body) for r in receiver.received("/ops")]
    assert [e["type"] for e in events] == ["edgecron.schedule.paused"]
    assert events[0]["data"]["pause_reason"] == reason
    assert ops
    resumed = call_api("POST", f"/v1/schedules/{s['id']}/resume", key=key).body
    assert resumed["pause_reason"] is None


def fire_times(key: str, schedule_id: str) -> list[tuple[str, bool]]:
    body = call_api("GET", f"/v1/schedules/{schedule_id}/fires", key=key, query={"limit": "50"}).body
    return [(f["fire_time"], f["manual"]) for f in body["data"]]


def test_a_trigger_fires_once_now_without_moving_the_schedule(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("trigger")
    ep = endpoint(key, receiver.url("/t"))
    s = schedule(key, cron="0 3 * * *", endpoint_ids=[ep], payload={"job": "report"})
    fixed.set(T0 + timedelta(milliseconds=250))
    resp = call_api("POST", f"/v1/schedules/{s['id']}/trigger", key=key)
    assert resp.status == 201, resp.body
    assert resp.body["manual"] is True and resp.body["fire_time"] == "2026-06-01T12:00:00.250Z"
    assert [r["endpoint_id"] for r in resp.body["runs"]] == [ep]
    assert pump.deliveries() == 1
    got = receiver.received("/t")
    assert len(got) == 1 and json.loads(got[0].body) == {"job": "report"}
    after = call_api("GET", f"/v1/schedules/{s['id']}", key=key).body
    assert after["next_fire_time"] == s["next_fire_time"] and after["status"] == "ACTIVE"
    history = call_api("GET", f"/v1/schedules/{s['id']}/fires", key=key).body["data"]
    assert [(f["fire_time"], f["manual"], f["status"]) for f in history] == [
        ("2026-06-01T12:00:00.250Z", True, "COMPLETED")
    ]


def test_two_triggers_in_one_millisecond_are_two_fires_and_none_lands_on_a_cron_time(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("trigger-twice")
    ep = endpoint(key, receiver.url("/t"))
    fixed.set(T0 - timedelta(seconds=30))
    s = schedule(key, cron="* * * * * *", endpoint_ids=[ep])  # every second: 12:00:00.000 is a cron time
    fixed.set(T0)
    first = call_api("POST", f"/v1/schedules/{s['id']}/trigger", key=key).body
    second = call_api("POST", f"/v1/schedules/{s['id']}/trigger", key=key).body
    assert first["fire_time"] == "2026-06-01T12:00:00.001Z"
    assert second["fire_time"] == "2026-06-01T12:00:00.002Z"
    manual = [t for t, is_manual in fire_times(key, s["id"]) if is_manual]
    assert sorted(manual) == ["2026-06-01T12:00:00.001Z", "2026-06-01T12:00:00.002Z"]
    cron_fires = [t for t, is_manual in fire_times(key, s["id"]) if not is_manual]
    assert cron_fires and all(t.endswith(".000Z") for t in cron_fires)
    assert {r["id"] for r in first["runs"]}.isdisjoint({r["id"] for r in second["runs"]})


def test_a_paused_or_unknown_schedule_cannot_be_triggered(fixed: clock.FixedClock) -> None:
    app_id, key = new_app("trigger-paused")
    s = schedule(key, cron="0 3 * * *")
    call_api("POST", f"/v1/schedules/{s['id']}/pause", key=key)
    paused = call_api("POST", f"/v1/schedules/{s['id']}/trigger", key=key)
    assert paused.status == 409 and paused.body["error"]["field"] == "id"
    assert call_api("GET", f"/v1/schedules/{s['id']}/fires", key=key).body["data"] == []
    missing = call_api("POST", "/v1/schedules/sch_nope/trigger", key=key)
    assert missing.status == 404
    assert schedule_data.get_timed(app_id, s["id"]) is not None


def test_failed_triggers_count_toward_auto_pause(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("trigger-fails")
    receiver.script("/down", Reply(500))
    policy = call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 1}).body["id"]
    ep = endpoint(key, receiver.url("/down"), retry_policy_id=policy)
    s = schedule(key, cron="0 3 * * *", endpoint_ids=[ep])
    for i in range(3):
        fixed.set(T0 + timedelta(seconds=i, milliseconds=5))
        assert call_api("POST", f"/v1/schedules/{s['id']}/trigger", key=key).status == 201
        pump.deliveries()
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=key).body
    assert got["status"] == "PAUSED" and got["pause_reason"].startswith("3 fires in a row failed: ")
    assert call_api("POST", f"/v1/schedules/{s['id']}/trigger", key=key).status == 409


def test_a_trigger_of_a_schedule_bound_to_every_endpoint_reaches_each(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("trigger-broadcast")
    endpoint(key, receiver.url("/a"))
    endpoint(key, receiver.url("/b"))
    s = schedule(key, cron="0 3 * * *")
    fixed.set(T0 + timedelta(milliseconds=7))
    resp = call_api("POST", f"/v1/schedules/{s['id']}/trigger", key=key)
    assert resp.status == 201 and resp.body["manual"] is True
    for _ in range(3):
        while pump.once("FanoutQueue", "fanout", batch=1):
            pass
        pump.deliveries()
    assert len(receiver.received("/a")) == 1 and len(receiver.received("/b")) == 1
    history = call_api("GET", f"/v1/schedules/{s['id']}/fires", key=key).body["data"]
    assert [(f["manual"], f["status"]) for f in history] == [(True, "COMPLETED")]


def scan_at(fixed: clock.FixedClock, when: datetime, pump: Pump) -> None:
    fixed.set(when)
    invoke("scan", {"detail": {}})
    pump.deliveries()


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_a_window_fires_nothing_before_start_at_nor_after_end_at_then_ends(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("window")
    ep = endpoint(key, receiver.url("/w"))
    start, end = T0 + timedelta(minutes=2), T0 + timedelta(minutes=4, seconds=30)
    s = schedule(key, cron="* * * * *", endpoint_ids=[ep], start_at=start.isoformat(), end_at=end.isoformat())
    assert s["next_fire_time"] == iso(start) and s["start_at"] == iso(start) and s["end_at"] == iso(end)
    for minute in range(0, 7):
        scan_at(fixed, T0 + timedelta(minutes=minute), pump)
    times = sorted(t for t, _ in fire_times(key, s["id"]))
    assert times == [iso(T0 + timedelta(minutes=m)) for m in (2, 3, 4)]
    history = call_api("GET", f"/v1/schedules/{s['id']}/fires", key=key).body["data"]
    assert [len(f["runs"]) for f in history] == [1, 1, 1]  # dispatched ahead: each sent with its delay
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=key).body
    assert got["status"] == "ENDED" and got["next_fire_time"] is None
    assert call_api("POST", f"/v1/schedules/{s['id']}/trigger", key=key).status == 409
    later = T0 + timedelta(minutes=9, seconds=30)
    patched = call_api("PATCH", f"/v1/schedules/{s['id']}", key=key, body={"end_at": later.isoformat()})
    assert patched.status == 200, patched.body
    assert patched.body["status"] == "ACTIVE"  # and its next fire, 12:07, was dispatched ahead at once
    assert patched.body["next_fire_time"] == iso(T0 + timedelta(minutes=7))
    assert iso(T0 + timedelta(minutes=7)) in [t for t, _ in fire_times(key, s["id"])]


def test_catch_up_after_an_outage_stays_inside_the_window(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("window-outage")
    ep = endpoint(key, receiver.url("/o"))
    end = T0 + timedelta(minutes=3)
    s = schedule(key, cron="* * * * *", endpoint_ids=[ep], end_at=end.isoformat())
    scan_at(fixed, T0 + timedelta(minutes=20), pump)  # nothing ran from 12:01 to 12:20
    pump.deliveries()
    times = sorted(t for t, _ in fire_times(key, s["id"]))
    assert times and max(times) <= iso(end)
    assert len(receiver.received("/o")) == 1  # RUN_ONCE: the latest missed time inside the window
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=key).body
    assert got["status"] == "ENDED" and got["next_fire_time"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {"cron": "* * * * *", "start_at": "2026-06-02T00:00:00Z", "end_at": "2026-06-01T00:00:00Z"},
            "end_at",
        ),
        (
            {"cron": "* * * * *", "start_at": "2026-06-02T00:00:00Z", "end_at": "2026-06-02T00:00:00Z"},
            "end_at",
        ),
        ({"cron": "* * * * *", "end_at": "tomorrow"}, "end_at"),
        ({"cron": "* * * * *", "status": "ENDED"}, "status"),
        ({"at": "2026-06-03T00:00:00Z", "end_at": "2026-06-02T00:00:00Z"}, "at"),
    ],
)
def test_a_bad_window_is_a_400_and_stores_nothing(
    body: dict[str, Any], field: str, fixed: clock.FixedClock
) -> None:
    _, key = new_app("bad-window")
    resp = call_api("POST", "/v1/schedules", key=key, body=body)
    assert resp.status == 400, resp.body
    assert resp.body["error"]["field"].endswith(field)
    assert call_api("GET", "/v1/schedules", key=key).body["data"] == []


def test_a_patch_that_inverts_the_window_is_a_400_and_changes_nothing(fixed: clock.FixedClock) -> None:
    _, key = new_app("bad-window-patch")
    s = schedule(key, cron="0 3 * * *", end_at="2026-07-01T00:00:00Z")
    resp = call_api("PATCH", f"/v1/schedules/{s['id']}", key=key, body={"start_at": "2026-08-01T00:00:00Z"})
    assert resp.status == 400 and resp.body["error"]["field"] == "end_at"
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=key).body
    assert got["start_at"] is None and got["end_at"] == "2026-07-01T00:00:00.000Z"
