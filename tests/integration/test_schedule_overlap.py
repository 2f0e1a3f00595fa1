"""Jitter and overlap policies through the handlers, against moto, with an injected clock: a
jittered fire keeps its nominal fire time and is delivered at its due time; SKIP and BUFFER_ONE
decide at each fire's due time while an earlier Fire's run stays open through its retries, and a
buffered fire starts even when the worker that settled the open one dies before starting it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock
from edgecron.domain import jitter
from edgecron.services.fires import admission, turns
from edgecron.sqs_batch import BatchFailed
from edgecron_testing.harness import call_api, delivery_message, invoke, sqs_event
from edgecron_testing.harness import new_endpoint as endpoint
from edgecron_testing.harness import new_schedule as schedule
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump, new_app, queue

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
EVERY_5_MIN = "0 */5 * * * *"


@pytest.fixture
def fixed() -> clock.FixedClock:
    c = clock.FixedClock(T0 - timedelta(minutes=2))
    clock.set_clock(c)
    return c


def fires(key: str, schedule_id: str) -> list[dict[str, Any]]:
    body = call_api("GET", f"/v1/schedules/{schedule_id}/fires", key=key, query={"limit": "50"}).body
    return list(reversed(body["data"]))  # oldest first


def at(minute: int, second: int = 0) -> datetime:
    return T0.replace(minute=minute, second=second)


def iso(moment: datetime) -> str:
    return clock.iso_ms(clock.to_ms(moment)) or ""


def fanout(pump: Pump) -> None:
    while pump.once("FanoutQueue", "fanout", batch=1):
        pass


def tick(fixed: clock.FixedClock, pump: Pump, moment: datetime, *, deliveries_first: bool = False) -> None:
    """The scan at `moment`, then the fan-out function (where a gated Fire is decided) and the workers."""
    fixed.set(moment)
    invoke("scan", {"detail": {}})
    if deliveries_first:
        pump.deliveries()
    fanout(pump)
    pump.deliveries()


# --- jitter_sec -----------------------------------------------------------------------------------


def test_jitter_and_overlap_policy_are_kept_shown_and_edited(app_key: str) -> None:
    plain = schedule(app_key, cron="0 3 * * *")
    assert plain["jitter_sec"] == 0 and plain["overlap_policy"] == "ALLOW"
    s = schedule(app_key, cron="0 3 * * *", jitter_sec=3600, overlap_policy="SKIP")
    assert s["jitter_sec"] == 3600 and s["overlap_policy"] == "SKIP"
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=app_key).body
    assert got["jitter_sec"] == 3600 and got["overlap_policy"] == "SKIP"
    patched = call_api(
        "PATCH",
        f"/v1/schedules/{s['id']}",
        key=app_key,
        body={"jitter_sec": 0, "overlap_policy": "BUFFER_ONE"},
    )
    assert patched.status == 200, patched.body
    assert patched.body["jitter_sec"] == 0 and patched.body["overlap_policy"] == "BUFFER_ONE"
    assert patched.body["next_fire_time"] == s["next_fire_time"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("jitter_sec", -1),
        ("jitter_sec", 3601),
        ("jitter_sec", "60"),
        ("jitter_sec", 1.5),
        ("jitter_sec", True),
        ("overlap_policy", "QUEUE"),
        ("overlap_policy", 1),
    ],
)
def test_a_bad_jitter_or_overlap_policy_is_a_400_with_its_field(app_key: str, field: str, value: Any) -> None:
    before = call_api("GET", "/v1/schedules", key=app_key).body["data"]
    created = call_api("POST", "/v1/schedules", key=app_key, body={"cron": "0 3 * * *", field: value})
    assert created.status == 400, created.body
    assert created.body["error"]["field"] == field and created.body["error"]["code"]
    assert call_api("GET", "/v1/schedules", key=app_key).body["data"] == before
    s = schedule(app_key, cron="0 3 * * *")
    patched = call_api("PATCH", f"/v1/schedules/{s['id']}", key=app_key, body={field: value})
    assert patched.status == 400, patched.body
    assert patched.body["error"]["field"] == field
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=app_key).body
    assert got["jitter_sec"] == 0 and got["overlap_policy"] == "ALLOW"


@pytest.mark.parametrize(
    ("field", "value", "default"), [("jitter_sec", 90, 0), ("overlap_policy", "SKIP", "ALLOW")]
)
def test_null_is_refused_at_create_and_sets_the_default_back_in_a_patch(
    app_key: str, field: str, value: Any, default: Any
) -> None:
    created = call_api("POST", "/v1/schedules", key=app_key, body={"cron": "0 3 * * *", field: None})
    assert created.status == 400 and created.body["error"]["field"] == field, created.body
    s = schedule(app_key, cron="0 3 * * *", **{field: value})
    assert s[field] == value
    patched = call_api("PATCH", f"/v1/schedules/{s['id']}", key=app_key, body={field: None})
    assert patched.status == 200 and patched.body[field] == default, patched.body


def jittered(key: str, endpoint_id: str, fire: datetime, *, beyond_ms: int) -> tuple[dict[str, Any], int]:
    """A schedule jittered over an hour whose fire at `fire` is due more than `beyond_ms` after it
    (offsets are a hash of the schedule id: another schedule is made while one falls short)."""
    for _ in range(20):
        s = schedule(key, cron="0 5 12 * * *", endpoint_ids=[endpoint_id], jitter_sec=3600)
        offset = jitter.offset_ms(s["id"], clock.to_ms(fire), 3600)
        if offset > beyond_ms:
            return s, offset
        assert call_api("DELETE", f"/v1/schedules/{s['id']}", key=key).status == 204
    raise AssertionError("no offset past the look-ahead in 20 schedules")


def test_a_jittered_fire_keeps_its_fire_time_and_is_delivered_at_its_due_time(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("jitter")
    ep = endpoint(key, receiver.url("/j"))
    fire = at(5)
    s, offset = jittered(key, ep, fire, beyond_ms=90_000)
    due = fire + timedelta(milliseconds=offset)
    tick(fixed, pump, fire - timedelta(seconds=30))  # dispatched ahead, as every fire
    tick(fixed, pump, fire)
    assert receiver.received("/j") == []
    [f] = fires(key, s["id"])
    assert f["fire_time"] == iso(fire) and f["due_at"] == iso(due) and f["manual"] is False
    assert [r["status"] for r in f["runs"]] == ["pending"]
    tick(fixed, pump, due - timedelta(seconds=71))  # not yet within the look-ahead of its due time
    assert receiver.received("/j") == []
    tick(fixed, pump, due)
    assert len(receiver.received("/j")) == 1
    [f] = fires(key, s["id"])
    assert f["status"] == "COMPLETED" and f["due_at"] == iso(due)
    run = call_api("GET", f"/v1/task-runs/{f['runs'][0]['id']}", key=key).body
    assert run["fire_time"] == iso(fire)


def test_a_pause_cancels_a_jittered_run_that_waits_long_after_its_fire(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    """A pause reads the Fires around the schedule's latest fire; one whose run waits for a jitter
    far past its fire time must still be found, or its run is delivered after the pause."""
    _, key = new_app("jitter-pause")
    ep = endpoint(key, receiver.url("/jp"))
    first = at(5)
    s = schedule(key, cron="0 * * * * *", endpoint_ids=[ep], jitter_sec=3600)
    while jitter.offset_ms(s["id"], clock.to_ms(first), 3600) < 20 * 60_000:  # a fire due 20 min on
        assert call_api("DELETE", f"/v1/schedules/{s['id']}", key=key).status == 204
        s = schedule(key, cron="0 * * * * *", endpoint_ids=[ep], jitter_sec=3600)
    for minute in range(5, 16):  # the schedule fires every minute; the first fire's run waits on
        tick(fixed, pump, at(minute))
    waiting = next(f for f in fires(key, s["id"]) if f["fire_time"] == iso(first))
    assert [r["status"] for r in waiting["runs"]] == ["pending"]
    resp = call_api("POST", f"/v1/schedules/{s['id']}/pause", key=key, body={})
    assert resp.status == 200, resp.body
    run = call_api("GET", f"/v1/task-runs/{waiting['runs'][0]['id']}", key=key).body
    assert run["status"] == "cancelled"


def test_a_pause_cancels_a_run_flow_control_holds_long_after_its_fire(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    """An Endpoint taking one delivery every 100 s and booked for the next half hour: the schedule's
    runs wait for their slots long after their fires, and a pause still finds and cancels them."""
    app_id, key = new_app("flow-pause")
    ep = endpoint(key, receiver.url("/fp"), max_per_sec=0.01)
    fixed.set(at(4, 30))
    for _ in range(20):
        assert call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep}).status == 201
    pump.deliveries()  # one is sent, nineteen wait for their slots, 100 s apart
    s = schedule(key, cron="0 * * * * *", endpoint_ids=[ep])
    for minute in range(5, 21):
        tick(fixed, pump, at(minute))
        [fire] = [f for f in fires(key, s["id"]) if f["fire_time"] == iso(at(minute))]
        # its message, as SQS hands it over at the fire time: flow control holds the run for its slot
        worker_queue = queue("DeliveryQueue").arn
        invoke("worker", sqs_event([delivery_message(r["id"], app_id) for r in fire["runs"]], worker_queue))
    held = [
        run["id"]
        for f in fires(key, s["id"])
        if f["fire_time"] < iso(at(14))  # more than the pause's look at recent Fires before its latest
        for run in f["runs"]
        if run["status"] == "pending"
    ]
    assert held, "no run waits long after its fire"
    resp = call_api("POST", f"/v1/schedules/{s['id']}/pause", key=key, body={})
    assert resp.status == 200, resp.body
    assert {call_api("GET", f"/v1/task-runs/{r}", key=key).body["status"] for r in held} == {"cancelled"}


def test_a_trigger_is_not_jittered(receiver: Receiver, pump: Pump, fixed: clock.FixedClock) -> None:
    _, key = new_app("jitter-trigger")
    ep = endpoint(key, receiver.url("/t"))
    s = schedule(key, cron="0 3 * * *", endpoint_ids=[ep], jitter_sec=3600)
    fixed.set(T0 + timedelta(milliseconds=250))
    resp = call_api("POST", f"/v1/schedules/{s['id']}/trigger", key=key)
    assert resp.status == 201, resp.body
    assert resp.body["due_at"] == resp.body["fire_time"] == "2026-06-01T12:00:00.250Z"
    assert pump.deliveries() == 1 and len(receiver.received("/t")) == 1


# --- overlap_policy -------------------------------------------------------------------------------


def slow_run_schedule(key: str, receiver: Receiver, policy: str) -> dict[str, Any]:
    """Every 5 minutes; the first fire's run fails and waits 20 minutes for its retry (it stays open
    through the next three fire times), then succeeds."""
    receiver.script("/slow", Reply(503), Reply(200))
    retry = call_api(
        "POST",
        "/v1/retry-policies",
        key=key,
        body={"max_attempts": 3, "base_delay_sec": 1200, "max_delay_sec": 1200},
    ).body["id"]
    ep = endpoint(key, receiver.url("/slow"), retry_policy_id=retry)
    return schedule(key, cron=EVERY_5_MIN, endpoint_ids=[ep], overlap_policy=policy)


def statuses(key: str, schedule_id: str) -> list[tuple[str, str, int]]:
    return [(f["fire_time"][11:19], f["status"], len(f["runs"])) for f in fires(key, schedule_id)]


def test_skip_records_the_fires_due_while_the_previous_one_is_open_as_skipped(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("overlap-skip")
    s = slow_run_schedule(key, receiver, "SKIP")
    for minute in (0, 5, 10, 15):
        tick(fixed, pump, at(minute))
    assert statuses(key, s["id"]) == [
        ("12:00:00", "RUNNING", 1),
        ("12:05:00", "SKIPPED", 0),
        ("12:10:00", "SKIPPED", 0),
        ("12:15:00", "SKIPPED", 0),
    ]
    skipped = fires(key, s["id"])[1]
    assert "12:00:00" in skipped["error"] and skipped["due_at"] == skipped["fire_time"]
    tick(fixed, pump, at(20), deliveries_first=True)  # the retry succeeds before the 12:20 fire is due
    assert statuses(key, s["id"])[0] == ("12:00:00", "COMPLETED", 1)
    assert statuses(key, s["id"])[-1] == ("12:20:00", "COMPLETED", 1)
    assert len(receiver.received("/slow")) == 3  # 12:00 twice (503, then 200), 12:20 once
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=key).body
    assert got["status"] == "ACTIVE" and got["consecutive_failures"] == 0
    assert call_api("GET", "/v1/notifications", key=key).body["data"] == []  # not missed, not failed


def test_buffer_one_starts_one_waiting_fire_when_the_open_one_settles_and_skips_the_rest(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("overlap-buffer")
    s = slow_run_schedule(key, receiver, "BUFFER_ONE")
    for minute in (0, 5, 10, 15):
        tick(fixed, pump, at(minute))
    assert statuses(key, s["id"]) == [
        ("12:00:00", "RUNNING", 1),
        ("12:05:00", "BUFFERED", 0),
        ("12:10:00", "SKIPPED", 0),
        ("12:15:00", "SKIPPED", 0),
    ]
    tick(fixed, pump, at(20), deliveries_first=True)
    # 12:00 settled and 12:05 started at 12:20; the 12:20 fire came due while 12:05 was open: it
    # waits in its turn, and starts when 12:05 settles
    assert statuses(key, s["id"]) == [
        ("12:00:00", "COMPLETED", 1),
        ("12:05:00", "COMPLETED", 1),
        ("12:10:00", "SKIPPED", 0),
        ("12:15:00", "SKIPPED", 0),
        ("12:20:00", "BUFFERED", 0),
    ]
    assert fires(key, s["id"])[1]["started_at"] == iso(at(20))
    fanout(pump)
    pump.deliveries()
    assert statuses(key, s["id"])[-1] == ("12:20:00", "COMPLETED", 1)
    assert len(receiver.received("/slow")) == 4


def _dies(name: str) -> Callable[..., None]:
    def crash(*_: object, **__: object) -> None:
        raise RuntimeError(f"worker died in {name}")

    return crash


@pytest.mark.parametrize("dies_in", ["release", "send_gate"])
def test_a_buffered_fire_starts_even_if_the_worker_settling_the_open_one_dies(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock, monkeypatch: pytest.MonkeyPatch, dies_in: str
) -> None:
    _, key = new_app("overlap-crash")
    s = slow_run_schedule(key, receiver, "BUFFER_ONE")
    for minute in (0, 5):
        tick(fixed, pump, at(minute))
    assert [st for _, st, _ in statuses(key, s["id"])] == ["RUNNING", "BUFFERED"]
    fixed.set(at(20))
    invoke("scan", {"detail": {}})  # enqueues the retry of 12:00 (and dispatches the 12:20 fire)
    with monkeypatch.context() as m:
        # before the turn is handed over, or after it and before the buffered fire is sent
        m.setattr(turns, dies_in, _dies(dies_in))
        with pytest.raises(BatchFailed, match="worker died"):
            pump.deliveries()  # the invocation fails: its message comes back once its visibility ends
    assert [st for _, st, _ in statuses(key, s["id"])][:2] == ["COMPLETED", "BUFFERED"]
    # the scan's reconcile of open Fires re-drives the buffered one: it finds the turn free
    tick(fixed, pump, at(20, 40))
    assert [st for _, st, _ in statuses(key, s["id"])][:2] == ["COMPLETED", "COMPLETED"]
    assert len(receiver.received("/slow")) == 3


def test_a_pause_cancels_the_buffered_fire_and_after_resume_the_next_fire_starts(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("overlap-pause")
    s = slow_run_schedule(key, receiver, "BUFFER_ONE")
    for minute in (0, 5):
        tick(fixed, pump, at(minute))
    assert [st for _, st, _ in statuses(key, s["id"])] == ["RUNNING", "BUFFERED"]
    fixed.set(at(6))
    assert call_api("POST", f"/v1/schedules/{s['id']}/pause", key=key).status == 200
    assert [st for _, st, _ in statuses(key, s["id"])] == ["CANCELLED", "CANCELLED"]
    assert call_api("POST", f"/v1/schedules/{s['id']}/resume", key=key).status == 200
    tick(fixed, pump, at(10))
    assert statuses(key, s["id"])[-1] == ("12:10:00", "COMPLETED", 1)
    assert len(receiver.received("/slow")) == 2  # 12:00 once (its retry was cancelled), 12:10 once


def test_skip_applies_to_a_schedule_bound_to_every_endpoint(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock
) -> None:
    _, key = new_app("overlap-broadcast")
    receiver.script("/all", Reply(503), Reply(200))
    retry = call_api(
        "POST",
        "/v1/retry-policies",
        key=key,
        body={"max_attempts": 3, "base_delay_sec": 1200, "max_delay_sec": 1200},
    ).body["id"]
    endpoint(key, receiver.url("/all"), retry_policy_id=retry)
    s = schedule(key, cron=EVERY_5_MIN, overlap_policy="SKIP")  # no endpoint_ids: every Endpoint
    for minute in (0, 5, 10, 15):
        tick(fixed, pump, at(minute))
    assert [st for _, st, _ in statuses(key, s["id"])] == ["RUNNING", "SKIPPED", "SKIPPED", "SKIPPED"]
    assert len(receiver.received("/all")) == 1
    tick(fixed, pump, at(20), deliveries_first=True)
    assert [st for _, st, _ in statuses(key, s["id"])] == [
        "COMPLETED",
        "SKIPPED",
        "SKIPPED",
        "SKIPPED",
        "COMPLETED",
    ]
    assert len(receiver.received("/all")) == 3


def test_an_admission_cut_short_after_taking_the_turn_is_finished_by_the_scan(
    receiver: Receiver, pump: Pump, fixed: clock.FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, key = new_app("overlap-admission-crash")
    ep = endpoint(key, receiver.url("/ok"))
    s = schedule(key, cron=EVERY_5_MIN, endpoint_ids=[ep], overlap_policy="SKIP")
    fixed.set(at(0))
    invoke("scan", {"detail": {}})
    with monkeypatch.context() as m:
        m.setattr(admission.fire_data, "admit", _dies("admit"))
        with pytest.raises(BatchFailed, match="worker died"):
            pump.once("FanoutQueue", "fanout", batch=1)
    assert statuses(key, s["id"]) == [("12:00:00", "SCHEDULED", 0)]
    assert receiver.received("/ok") == []
    tick(fixed, pump, at(0, 40))  # the scan re-drives it: the turn it took is its own
    assert statuses(key, s["id"]) == [("12:00:00", "COMPLETED", 1)]
    assert len(receiver.received("/ok")) == 1
