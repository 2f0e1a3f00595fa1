"""What a user of a schedule observes, on a virtual clock that drives the scan, the queues and the
workers together: every fire after a resume is delivered, none after a pause, `next_fire_time`,
`last_fire_time` and `preview` describe the schedule (not how far fires were dispatched ahead), a
failed read in a scan tick loses no fire, and a paused schedule that was behind records what it
owed. The rules are written in docs/time-rules.md (What a schedule promises)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from edgecron import clock
from edgecron.data.fires import run_id as run_id_for
from edgecron.data.models import FireModel, ScheduleModel
from edgecron_cli.local.stack import REBUILD_EVENT
from edgecron_testing import faults
from edgecron_testing.harness import call_api, delivery_message, invoke, sqs_event, timeout_sec
from edgecron_testing.inprocess import Pump, TableCalls, drain_queues, due_walk_left_at, queue
from edgecron_testing.receiver import Receiver, Reply
from edgecron_testing.virtual_time import VirtualStack, sqs_on_clock
from tests.integration.conftest import app_runs, new_app

T0 = datetime(2026, 12, 3, 10, 0, 0, tzinfo=UTC)
TERMINAL_RUN = {"success", "failed", "dead_letter", "cancelled"}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def iso(value: datetime) -> str:
    return clock.iso(value) or ""


@pytest.fixture
def stack() -> Iterator[VirtualStack]:
    fixed = clock.FixedClock(T0 - timedelta(minutes=1))
    with sqs_on_clock(fixed):
        due_walk_left_at(clock.to_ms(T0) - 60_000)
        yield VirtualStack(fixed)


class Tenant:
    def __init__(self, receiver: Receiver, name: str) -> None:
        self.app_id, self.key = new_app(name)
        self.receiver = receiver
        self.path = f"/{name}"
        resp = call_api("POST", "/v1/endpoints", key=self.key, body={"url": receiver.url(self.path)})
        assert resp.status == 201, resp.body
        self.endpoint_id = resp.body["id"]

    def api(self, method: str, path: str, body: dict[str, Any] | None = None, **kw: Any) -> Any:
        return call_api(method, path, key=self.key, body=body, **kw)

    def schedule(self, **body: Any) -> dict[str, Any]:
        resp = self.api("POST", "/v1/schedules", {"endpoint_ids": [self.endpoint_id], **body})
        assert resp.status == 201, resp.body
        return dict(resp.body)

    def get(self, schedule_id: str, preview: int = 0) -> dict[str, Any]:
        query = {"preview": str(preview)} if preview else None
        resp = self.api("GET", f"/v1/schedules/{schedule_id}", query=query)
        assert resp.status == 200, resp.body
        return dict(resp.body)

    def fires(self, schedule_id: str) -> list[dict[str, Any]]:
        """Every Fire of the schedule, as GET /v1/schedules/{id}/fires pages them."""
        fires: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = {"limit": "50", **({"cursor": cursor} if cursor else {})}
            page = self.api("GET", f"/v1/schedules/{schedule_id}/fires", query=query).body
            fires += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return fires

    def delivered(self, schedule_id: str) -> list[str]:
        """The nominal fire times the receiver was called for, as the delivery headers name them."""
        return sorted(
            r.headers["edgecron-fire-time"]
            for r in self.receiver.requests
            if r.path == self.path and r.headers.get("edgecron-schedule-id") == schedule_id
        )


def every(seconds: int, start: float, end: float) -> list[str]:
    """The fire times of an every-`seconds` schedule in [start, end] (seconds after T0)."""
    first = int(start) + (-int(start)) % seconds
    return [iso(at(s)) for s in range(first, int(end) + 1, seconds)]


def created_then_paused(stack: VirtualStack, t: Tenant, **body: Any) -> dict[str, Any]:
    """A schedule created at 10:00:00.5, run until 10:00:12 (its next fires dispatched ahead), then
    paused at 10:00:12.5."""
    stack.run_until(at(0.5))
    s = t.schedule(**body)
    stack.run_until(at(12))
    stack.clock.set(at(12.5))
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    return s


def test_a_resume_delivers_every_fire_after_it_including_those_dispatched_before_the_pause(
    stack: VirtualStack, receiver: Receiver
) -> None:
    t = Tenant(receiver, "pause-resume")
    s = created_then_paused(stack, t, cron="*/5 * * * * *")
    stack.run_until(at(14))
    stack.clock.set(at(14.5))
    resumed = t.api("POST", f"/v1/schedules/{s['id']}/resume")
    assert resumed.status == 200
    assert resumed.body["next_fire_time"] == iso(at(15))
    stack.run_until(at(125))
    assert t.delivered(s["id"]) == every(5, 1, 10) + every(5, 15, 125)


def test_a_resume_of_a_minutely_schedule_delivers_its_next_fire_dispatched_before_the_pause(
    stack: VirtualStack, receiver: Receiver
) -> None:
    t = Tenant(receiver, "pause-resume-minutes")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/5 * * * *")
    stack.run_until(at(4 * 60 + 10))  # the scan dispatched 10:05 ahead
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    stack.run_until(at(4 * 60 + 20))
    assert t.api("POST", f"/v1/schedules/{s['id']}/resume").status == 200
    stack.run_until(at(11 * 60 + 5))
    assert t.delivered(s["id"]) == [iso(at(300)), iso(at(600))]


def test_a_resume_before_its_time_delivers_a_broadcast_fire_whose_fan_out_ran_during_the_pause(
    stack: VirtualStack, receiver: Receiver
) -> None:
    t = Tenant(receiver, "broadcast-pause")
    second = call_api("POST", "/v1/endpoints", key=t.key, body={"url": receiver.url("/broadcast-pause-2")})
    assert second.status == 201, second.body
    stack.run_until(at(0.5))
    created = t.api("POST", "/v1/schedules", {"cron": "0 * * * * *"})  # every Endpoint of the App
    assert created.status == 201, created.body
    s = created.body
    # the create dispatched 10:01:00 ahead; its fan-out runs while the schedule is paused
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    stack.run_until(at(20))
    assert t.api("POST", f"/v1/schedules/{s['id']}/resume").status == 200
    stack.run_until(at(65))
    to_both = [
        r.path
        for r in receiver.requests
        if r.headers.get("edgecron-schedule-id") == s["id"]
        and r.headers.get("edgecron-fire-time") == iso(at(60))
    ]
    assert sorted(to_both) == ["/broadcast-pause", "/broadcast-pause-2"]
    fires = t.api("GET", f"/v1/schedules/{s['id']}/fires").body["data"]
    assert [(f["fire_time"], f["status"]) for f in fires if f["fire_time"] == iso(at(60))] == [
        (iso(at(60)), "COMPLETED")
    ]


def test_a_broadcast_fire_whose_time_comes_while_paused_is_cancelled_and_not_delivered(
    stack: VirtualStack, receiver: Receiver
) -> None:
    t = Tenant(receiver, "broadcast-paused")
    stack.run_until(at(0.5))
    created = t.api("POST", "/v1/schedules", {"cron": "0 * * * * *"})
    assert created.status == 201, created.body
    s = created.body
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    stack.run_until(at(90))
    assert t.delivered(s["id"]) == []
    fires = t.api("GET", f"/v1/schedules/{s['id']}/fires").body["data"]
    assert [(f["fire_time"], f["status"]) for f in fires] == [(iso(at(60)), "CANCELLED")]
    assert t.get(s["id"])["status"] == "PAUSED"


@pytest.mark.parametrize(
    "edit_lands", ["after_the_fire_is_put", "after_the_dispatch_reads_the_schedule_again"]
)
def test_a_timing_edit_racing_the_scan_delivers_no_fire_the_new_timing_does_not_have(
    stack: VirtualStack, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, edit_lands: str
) -> None:
    """A PATCH of the cron expression that lands while the scan dispatches a fire of the old timing
    ahead (between its Fire put and its send): the fire is never delivered, and the new timing's are."""
    from edgecron.services.fires import dispatch

    t = Tenant(receiver, f"edit-race-{edit_lands}")
    stack.run_until(at(0.5))
    s = t.schedule(cron="0 * * * * *")  # every minute; the create dispatches 10:01:00
    raced = at(120)  # the scan at 10:01:00 dispatches 10:02:00 ahead: the edit lands inside it
    module, name = (
        (dispatch.fire_data, "create")
        if edit_lands == "after_the_fire_is_put"
        else (dispatch.schedule_data, "get")
    )
    real = getattr(module, name)
    edited: list[int] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        caller = sys._getframe(1).f_code.co_name
        is_raced = clock.to_ms(raced) in args if name == "create" else caller == "_dispatch_listed"
        if not edited and stack.clock.now() >= at(59) and is_raced:
            edited.append(clock.to_ms(stack.clock.now()))
            resp = t.api("PATCH", f"/v1/schedules/{s['id']}", {"cron": "0 */5 * * * *"})
            assert resp.status == 200, resp.body
        return result

    monkeypatch.setattr(module, name, racing)
    stack.run_until(at(61))
    assert edited, "the edit did not land inside the scan's dispatch"
    monkeypatch.setattr(module, name, real)
    stack.run_until(at(5 * 60 + 5))
    assert t.delivered(s["id"]) == [iso(at(60)), iso(at(300))]
    statuses = {
        f["fire_time"]: f["status"] for f in t.api("GET", f"/v1/schedules/{s['id']}/fires").body["data"]
    }
    assert statuses[iso(raced)] == "CANCELLED", statuses  # put before the edit, its run never sent


def test_no_fire_after_a_pause_returned_is_delivered_even_one_dispatched_just_before(
    stack: VirtualStack, receiver: Receiver
) -> None:
    t = Tenant(receiver, "pause-edge")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/2 * * * * *")
    stack.run_until(at(7))
    stack.clock.set(at(7.7))  # 0.3 s before a fire whose run waits in the queue
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    stack.run_until(at(90))
    assert t.delivered(s["id"]) == every(2, 1, 6)
    fires = t.api("GET", f"/v1/schedules/{s['id']}/fires", query={"limit": "50"}).body["data"]
    after_pause = [f for f in fires if f["fire_time"] > iso(at(7.7))]
    assert all(f["status"] == "CANCELLED" for f in after_pause), after_pause
    for f in after_pause:  # never started: no start, no (negative) duration
        assert f["started_at"] is None and f["duration_ms"] is None, f


def test_next_fire_time_last_fire_time_and_preview_describe_the_schedule(
    stack: VirtualStack, receiver: Receiver
) -> None:
    t = Tenant(receiver, "timing-truth")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/10 * * * * *")
    assert s["next_fire_time"] == iso(at(10))
    assert s["last_fire_time"] is None
    assert t.get(s["id"], preview=3)["preview"] == [iso(at(10)), iso(at(20)), iso(at(30))]
    stack.run_until(at(25))
    stack.clock.set(at(25.5))
    got = t.get(s["id"], preview=3)
    assert (got["next_fire_time"], got["last_fire_time"]) == (iso(at(30)), iso(at(20)))
    assert got["preview"] == [iso(at(30)), iso(at(40)), iso(at(50))]
    paused = t.api("POST", f"/v1/schedules/{s['id']}/pause").body
    assert (paused["next_fire_time"], paused["last_fire_time"]) == (None, iso(at(20)))
    stack.run_until(at(95))
    got = t.get(s["id"], preview=3)
    assert (got["next_fire_time"], got["last_fire_time"], got["preview"]) == (None, iso(at(20)), [])
    resumed = t.api("POST", f"/v1/schedules/{s['id']}/resume").body
    assert (resumed["next_fire_time"], resumed["last_fire_time"]) == (iso(at(100)), iso(at(20)))
    stack.run_until(at(101))
    assert t.get(s["id"])["last_fire_time"] == iso(at(100))


def test_a_failed_read_of_the_due_index_loses_no_fire_of_the_scan_window(
    stack: VirtualStack, receiver: Receiver
) -> None:
    t = Tenant(receiver, "scan-fault")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/10 * * * * *")
    daily = t.schedule(cron="30 1 10 * * *")  # 10:01:30 each day: on the day wheel
    stack.run_until(at(59))
    events = ScheduleModel._get_connection().connection.client.meta.events
    failed: list[str] = []

    def throttle_first_due_query(params: dict[str, Any], **_: Any) -> None:
        if not failed and params.get("IndexName") == "due_slots":
            failed.append("Query")
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "Query")

    events.register("before-parameter-build.dynamodb.Query", throttle_first_due_query)
    try:
        stack.run_until(at(61))
    finally:
        events.unregister("before-parameter-build.dynamodb.Query", throttle_first_due_query)
    assert failed, "the fault was not injected"
    assert stack.scans[-1]["item_failures"] >= 1, stack.scans[-1]
    stack.run_until(at(200))
    # the failed tick dispatched nothing: the next one finds both schedules behind and follows their
    # missed-fire policy (RUN_ONCE: the latest missed fire runs late, the others are recorded MISSED)
    missed = every(10, 80, 100)
    fires = t.api("GET", f"/v1/schedules/{s['id']}/fires", query={"limit": "50"}).body["data"]
    assert {f["fire_time"] for f in fires if f["status"] == "MISSED"} == set(missed)
    assert t.delivered(s["id"]) == [f for f in every(10, 1, 200) if f not in missed]
    assert t.delivered(daily["id"]) == [iso(at(90))]


def test_pausing_a_schedule_that_is_behind_records_the_fires_it_owed_as_missed(
    stack: VirtualStack, receiver: Receiver
) -> None:
    t = Tenant(receiver, "pause-behind")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/1 * * * *", missed_policy="SKIP")
    stack.run_until(at(61))
    assert t.delivered(s["id"]) == [iso(at(60))]
    stack.scan_down = True  # the scan is out for five minutes
    stack.run_until(at(6 * 60 + 10))
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    stack.scan_down = False
    stack.run_until(at(9 * 60 + 5))
    fires = t.api("GET", f"/v1/schedules/{s['id']}/fires", query={"limit": "50"}).body["data"]
    by_time = {f["fire_time"]: f["status"] for f in fires}
    owed = [iso(at(m * 60)) for m in range(3, 7)]  # 10:02 was dispatched ahead before the outage
    assert [by_time.get(f) for f in owed] == ["MISSED"] * 4, by_time
    assert t.delivered(s["id"]) == [iso(at(60)), iso(at(120))]


@pytest.mark.parametrize("field", ["start_at", "end_at", "at"])
@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59Z"])
def test_a_time_the_engine_cannot_compute_is_refused_naming_the_field(
    field: str, value: str, receiver: Receiver
) -> None:
    t = Tenant(receiver, "far-times")
    body: dict[str, Any] = {"cron": "0 * * * *"} if field != "at" else {}
    body[field] = value
    resp = t.api("POST", "/v1/schedules", {"endpoint_ids": [t.endpoint_id], **body})
    assert resp.status == 400, resp.body
    assert resp.body["error"]["field"] == field
    assert t.api("GET", "/v1/schedules").body["data"] == []
    s = t.schedule(cron="0 * * * *")
    patched = t.api("PATCH", f"/v1/schedules/{s['id']}", {field: value})
    assert patched.status == 400 and patched.body["error"]["field"] == field, patched.body
    assert t.api("GET", "/v1/schedules").status == 200


def test_a_restart_that_lost_the_queues_delivers_every_fire_dispatched_ahead(
    stack: VirtualStack, receiver: Receiver
) -> None:
    """The local stack keeps its queues in memory: on start it rebuilds them from the tables with a
    scan that knows every message is lost, which must re-send the runs of fires dispatched ahead."""
    t = Tenant(receiver, "restart")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/2 * * * * *")
    stack.run_until(at(10))
    drain_queues()  # the stack stopped: its queues are gone, the tables stay
    invoke("scan", REBUILD_EVENT)
    stack.run_until(at(90))
    assert t.delivered(s["id"]) == every(2, 1, 90)


def test_an_auto_paused_schedule_keeps_the_failure_count_that_paused_it(receiver: Receiver) -> None:
    """A success whose request was made before the auto-pause and that ends after it does not reset
    the count the pause reason names: `consecutive_failures` and `pause_reason` agree."""
    clock.set_clock(clock.FixedClock(at(0.5)))
    t = Tenant(receiver, "late-success")
    policy = t.api("POST", "/v1/retry-policies", {"strategy": "fixed", "max_attempts": 1}).body["id"]
    s = t.schedule(cron="*/10 * * * * *", retry_policy_id=policy)
    while Pump().once("FanoutQueue", "fanout", batch=1):  # the rest of the create's window
        pass
    clock.set_clock(clock.FixedClock(at(40)))  # the fires of 10 s … 40 s are all due
    runs = [run_id_for(s["id"], clock.to_ms(at(n)), t.endpoint_id) for n in (10, 20, 30, 40)]
    receiver.script(t.path, Reply(500), Reply(500), Reply(200, delay_sec=1.5), Reply(500))
    for run_id in runs[:2]:  # two fires fail
        invoke("worker", _deliveries([run_id], t.app_id))
    late = threading.Thread(target=lambda: invoke("worker", _deliveries(runs[2:3], t.app_id)))
    late.start()  # the third one's request is on the wire, slowly answered 200 …
    receiver.wait_for(t.path, 3)
    invoke("worker", _deliveries(runs[3:], t.app_id))  # … while the fourth fails: that pauses it
    assert t.get(s["id"])["status"] == "PAUSED"
    late.join()
    got = t.get(s["id"])
    assert (got["status"], got["consecutive_failures"]) == ("PAUSED", 3), got
    assert got["pause_reason"].startswith("3 fires in a row failed"), got
    assert t.api("POST", f"/v1/schedules/{s['id']}/resume").body["consecutive_failures"] == 0


def _deliveries(run_ids: list[str], app_id: str) -> dict[str, Any]:
    return sqs_event([delivery_message(r, app_id) for r in run_ids], queue("DeliveryQueue").arn)


@pytest.mark.parametrize("reply", [500, 200])
def test_a_scheduled_delivery_reads_its_schedule_once_and_its_fire_at_most_once(
    reply: int, receiver: Receiver
) -> None:
    """The worker reads the schedule right before the request and settles the Fire (and counts the
    failure) from that copy and the run: one read of each item at most, failing or not."""
    clock.set_clock(clock.FixedClock(at(0.5)))
    t = Tenant(receiver, f"reads-{reply}")
    policy = t.api("POST", "/v1/retry-policies", {"strategy": "fixed", "max_attempts": 1}).body["id"]
    s = t.schedule(cron="*/10 * * * * *", retry_policy_id=policy)
    receiver.script(t.path, Reply(reply))
    clock.set_clock(clock.FixedClock(at(10)))
    run_id = run_id_for(s["id"], clock.to_ms(at(10)), t.endpoint_id)
    with (
        TableCalls(ScheduleModel, "GetItem", t.app_id) as schedule_reads,
        TableCalls(FireModel, "GetItem") as fire_reads,
        TableCalls(FireModel, "Query") as fire_queries,
    ):
        invoke("worker", _deliveries([run_id], t.app_id))
    assert len(receiver.received(t.path)) == 1
    fire = t.api("GET", f"/v1/schedules/{s['id']}/fires", query={"limit": "5"}).body["data"]
    assert {f["fire_time"]: f["status"] for f in fire}[iso(at(10))] == (
        "FAILED" if reply == 500 else "COMPLETED"
    )
    assert schedule_reads.calls == 1
    assert fire_reads.calls + fire_queries.calls <= 1


@pytest.mark.parametrize("kind", [faults.BEFORE, faults.AFTER, faults.KILL])
def test_a_failed_read_of_the_schedule_before_the_request_delays_the_fire_never_loses_it(
    kind: str, stack: VirtualStack, receiver: Receiver
) -> None:
    """The worker's read of the schedule right before the request fails (a throttle, an answer
    lost, the invocation killed): no request is made then, the message comes back, and the fire is
    delivered exactly once, late."""
    t = Tenant(receiver, f"worker-read-{kind}")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/10 * * * * *")
    with faults.Faults() as f:
        f.on("dynamodb", "GetItem", kind=kind, function="worker", table="SchedulesTable")
        stack.run_until(at(11))
    assert f.injected, "the fault was not injected"
    assert iso(at(10)) not in t.delivered(s["id"])
    stack.run_until(at(8 * 60))
    assert t.delivered(s["id"]) == every(10, 1, 8 * 60)
    fires = t.api("GET", f"/v1/schedules/{s['id']}/fires", query={"limit": "50"}).body["data"]
    assert all(f["status"] == "COMPLETED" for f in fires if f["fire_time"] <= iso(at(7 * 60))), fires


def test_a_schedule_whose_last_fires_were_dispatched_ahead_is_active_until_they_are_due(
    stack: VirtualStack, receiver: Receiver
) -> None:
    """A cron schedule with an end_at is ENDED once no fire time is left before its end, not when
    its last fire was dispatched ahead: until then it reads ACTIVE with its next fire times."""
    t = Tenant(receiver, "end-at")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/10 * * * * *", end_at=iso(at(65)))
    assert (s["status"], s["next_fire_time"]) == ("ACTIVE", iso(at(10)))
    stack.run_until(at(30))
    stack.clock.set(at(30.5))
    got = t.get(s["id"], preview=5)
    assert (got["status"], got["next_fire_time"]) == ("ACTIVE", iso(at(40))), got
    assert got["preview"] == [iso(at(40)), iso(at(50)), iso(at(60))], got
    stack.run_until(at(61))
    got = t.get(s["id"], preview=5)
    assert (got["status"], got["next_fire_time"], got["preview"]) == ("ENDED", None, []), got
    assert t.delivered(s["id"]) == every(10, 1, 60)


@pytest.mark.parametrize("policy", ["RUN_ONCE", "SKIP"])
def test_pausing_a_schedule_that_owes_one_fire_records_it_as_missed(
    policy: str, stack: VirtualStack, receiver: Receiver
) -> None:
    """One fire time passed while the schedule was ACTIVE and no scan dispatched it: the pause
    records it MISSED, as it does two or more."""
    t = Tenant(receiver, f"pause-owes-one-{policy}")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/1 * * * *", missed_policy=policy)
    stack.run_until(at(61))
    stack.scan_down = True  # the tick of 10:02 dispatches 10:03 no more
    stack.run_until(at(3 * 60 + 10))
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    stack.scan_down = False
    stack.run_until(at(6 * 60 + 5))
    fires = t.api("GET", f"/v1/schedules/{s['id']}/fires", query={"limit": "50"}).body["data"]
    by_time = {f["fire_time"]: f["status"] for f in fires}
    assert by_time.get(iso(at(180))) == "MISSED", by_time
    assert t.delivered(s["id"]) == [iso(at(60)), iso(at(120))]


def test_the_last_fires_before_end_at_count_toward_the_auto_pause(
    stack: VirtualStack, receiver: Receiver
) -> None:
    """Fires that fail in the last look-ahead before end_at (all dispatched already) are counted:
    three in a row pause the schedule, as anywhere else in its life."""
    t = Tenant(receiver, "end-at-failing")
    policy = t.api("POST", "/v1/retry-policies", {"strategy": "fixed", "max_attempts": 1}).body["id"]
    receiver.script(t.path, Reply(500))
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/10 * * * * *", end_at=iso(at(65)), retry_policy_id=policy)
    stack.run_until(at(61))
    got = t.get(s["id"])
    assert (got["status"], got["consecutive_failures"]) == ("PAUSED", 3), got
    assert got["pause_reason"].startswith("3 fires in a row failed: "), got
    assert t.delivered(s["id"]) == every(10, 1, 30)


def test_a_resume_of_a_schedule_firing_its_last_fires_before_end_at_changes_nothing(
    stack: VirtualStack, receiver: Receiver
) -> None:
    """A schedule whose last fires before end_at are dispatched is still firing: a resume of it is
    a resume of an ACTIVE schedule, which keeps its failure count."""
    t = Tenant(receiver, "end-at-resume")
    policy = t.api("POST", "/v1/retry-policies", {"strategy": "fixed", "max_attempts": 1}).body["id"]
    receiver.script(t.path, Reply(500))
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/10 * * * * *", end_at=iso(at(65)), retry_policy_id=policy)
    stack.run_until(at(20))
    stack.clock.set(at(20.5))
    resumed = t.api("POST", f"/v1/schedules/{s['id']}/resume")
    assert resumed.status == 200, resumed.body
    assert (resumed.body["status"], resumed.body["consecutive_failures"]) == ("ACTIVE", 2), resumed.body
    stack.run_until(at(31))
    got = t.get(s["id"])
    assert (got["status"], got["consecutive_failures"]) == ("PAUSED", 3), got


def test_an_edit_back_to_the_timing_before_delivers_its_fires_dispatched_ahead(
    stack: VirtualStack, receiver: Receiver
) -> None:
    """After a timing edit returns, fires after it follow the new timing, also when the edit goes
    back to a timing whose fires an earlier edit cancelled."""
    t = Tenant(receiver, "edit-back")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/10 * * * * *")
    stack.run_until(at(20))
    stack.clock.set(at(20.5))
    assert t.api("PATCH", f"/v1/schedules/{s['id']}", {"cron": "*/15 * * * * *"}).status == 200
    assert t.api("PATCH", f"/v1/schedules/{s['id']}", {"cron": "*/10 * * * * *"}).status == 200
    stack.run_until(at(130))
    assert t.delivered(s["id"]) == every(10, 1, 130)


@pytest.mark.parametrize("bound", ["listed", "broadcast", "skip_overlap"])
def test_an_edit_and_an_edit_back_before_a_fire_deliver_it_and_an_edit_alone_does_not(
    stack: VirtualStack, receiver: Receiver, bound: str
) -> None:
    """The same rule for a fire bound to listed Endpoints, to every Endpoint (its fan-out decides)
    and under an overlap policy (its admission decides): a fire dispatched ahead is delivered iff
    the timing in effect at its time fires then."""
    t = Tenant(receiver, f"edit-{bound}")
    body: dict[str, Any] = {"cron": "0 * * * * *"}  # broadcast: every Endpoint of the App
    if bound != "broadcast":
        body["endpoint_ids"] = [t.endpoint_id]
    if bound == "skip_overlap":
        body["overlap_policy"] = "SKIP"
    stack.run_until(at(0.5))
    created = t.api("POST", "/v1/schedules", body)
    assert created.status == 201, created.body
    s = created.body
    stack.run_until(at(10))  # 10:01:00 dispatched ahead by the create
    assert t.api("PATCH", f"/v1/schedules/{s['id']}", {"cron": "30 * * * * *"}).status == 200
    stack.run_until(at(20))
    assert t.api("PATCH", f"/v1/schedules/{s['id']}", {"cron": "0 * * * * *"}).status == 200
    stack.run_until(at(62))
    assert t.delivered(s["id"]) == [iso(at(60))]
    assert t.api("PATCH", f"/v1/schedules/{s['id']}", {"cron": "30 * * * * *"}).status == 200
    stack.run_until(at(125))  # 10:02:00 was dispatched ahead before this edit: never delivered
    assert t.delivered(s["id"]) == [iso(at(60)), iso(at(90))]
    statuses = {
        f["fire_time"]: f["status"] for f in t.api("GET", f"/v1/schedules/{s['id']}/fires").body["data"]
    }
    assert statuses[iso(at(120))] == "CANCELLED", statuses


def test_the_last_fire_of_a_broadcast_schedule_before_its_end_is_delivered(
    stack: VirtualStack, receiver: Receiver
) -> None:
    t = Tenant(receiver, "broadcast-end")
    stack.run_until(at(0.5))
    created = t.api("POST", "/v1/schedules", {"cron": "0 * * * * *", "end_at": iso(at(90))})
    assert created.status == 201, created.body
    stack.run_until(at(125))
    assert t.delivered(created.body["id"]) == [iso(at(60))]


@pytest.mark.parametrize("kind", [faults.AFTER, faults.KILL_AFTER])
def test_a_resume_retried_after_its_answer_was_lost_delivers_every_fire_after_it(
    kind: str, stack: VirtualStack, receiver: Receiver
) -> None:
    """The resume's write of the schedule took effect and its answer was lost (a read timeout, the
    invocation killed): the client's retry finds the schedule ACTIVE and answers. Every fire after
    that answer is delivered, those before the next scan tick included."""
    t = Tenant(receiver, f"resume-retried-{kind}")
    s = created_then_paused(stack, t, cron="*/5 * * * * *")
    stack.run_until(at(14))
    stack.clock.set(at(14.5))
    with faults.Faults() as f:
        f.on("dynamodb", "PutItem", kind=kind, function="api", table="SchedulesTable")
        try:
            first = t.api("POST", f"/v1/schedules/{s['id']}/resume").status
        except faults.InvocationKilled:
            first = None
    assert f.injected and first != 200, "the fault was not injected"
    retried = t.api("POST", f"/v1/schedules/{s['id']}/resume")
    assert retried.status == 200 and retried.body["status"] == "ACTIVE", retried.body
    stack.run_until(at(125))
    assert t.delivered(s["id"]) == every(5, 1, 10) + every(5, 15, 125)


def test_a_create_retried_after_its_answer_was_lost_delivers_every_fire_after_it(
    stack: VirtualStack, receiver: Receiver
) -> None:
    """The create stored the schedule and its invocation died before it answered: the client's
    retry with the same Idempotency-Key answers for that schedule, and every fire after that answer
    is delivered, those before the next scan tick included."""
    t = Tenant(receiver, "create-retried")
    stack.run_until(at(0.5))
    body = {"cron": "*/5 * * * * *", "endpoint_ids": [t.endpoint_id]}
    with faults.Faults() as f:
        f.on("dynamodb", "PutItem", kind=faults.KILL_AFTER, function="api", table="SchedulesTable")
        with pytest.raises(faults.InvocationKilled):
            t.api("POST", "/v1/schedules", body, headers={"Idempotency-Key": "create-once"})
    assert f.injected, "the fault was not injected"
    stack.run_until(at(timeout_sec("api") + 2))  # the dead request's hold on the key runs out
    retried = t.api("POST", "/v1/schedules", body, headers={"Idempotency-Key": "create-once"})
    assert retried.status == 201, retried.body
    answered = timeout_sec("api") + 2
    stack.run_until(at(150))
    delivered = t.delivered(retried.body["id"])
    assert [d for d in delivered if d > iso(at(answered))] == every(5, answered + 1, 150)


@pytest.mark.parametrize("dies", ["before its runs", "after its runs"])
def test_a_broadcast_fire_whose_fan_out_died_and_came_back_after_a_pause_leaves_no_run_pending(
    dies: str, stack: VirtualStack, receiver: Receiver
) -> None:
    """The fan-out of a broadcast Fire dies (before it made the Fire's runs, or right after it
    wrote them); a pause after the fire time; the fan-out message comes back after its visibility
    timeout. The Fire reads CANCELLED, nothing of it is delivered, and no run of it is left
    pending."""
    t = Tenant(receiver, "broadcast-late-page")
    stack.run_until(at(0.5))
    created = t.api("POST", "/v1/schedules", {"cron": "0 * * * * *"})  # every Endpoint of the App
    assert created.status == 201, created.body
    s = created.body
    with faults.Faults() as f:
        if dies == "before its runs":
            f.on(kind=faults.KILL, function="fanout")
        else:
            f.on(kind=faults.KILL_AFTER, function="fanout", table="RunsTable", when=writes)
        stack.run_until(at(61))
    assert f.injected, "the fault was not injected"
    stack.clock.set(at(75))
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    stack.run_until(at(20 * 60))  # the fan-out message comes back after its visibility timeout
    for minutes in range(25, 125, 5):  # the scan ticks of the next two hours
        stack.clock.set(at(minutes * 60))
        stack.scan()
        stack.consume()
    assert t.delivered(s["id"]) == []
    fires = t.api("GET", f"/v1/schedules/{s['id']}/fires").body["data"]
    assert (iso(at(60)), "CANCELLED") in [(f["fire_time"], f["status"]) for f in fires]
    assert {f["status"] for f in fires} == {"CANCELLED"}  # 10:02 was dispatched ahead before the pause
    pending = [(r.run_id, r.status) for r in app_runs(t.app_id) if r.status not in TERMINAL_RUN]
    assert pending == []


def writes(call: faults.Call) -> bool:
    return call.operation in ("PutItem", "BatchWriteItem", "TransactWriteItems", "UpdateItem")


PAUSED_FIRE_KINDS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # the schedule, and the invocation that decides its fire at its time and dies there
    "listed": ({"cron": "*/10 * * * * *"}, {"kind": faults.KILL, "function": "worker"}),
    "broadcast": (
        {"cron": "*/10 * * * * *", "endpoint_ids": []},
        {"kind": faults.KILL, "function": "worker"},
    ),
    "gated": (
        {"cron": "*/10 * * * * *", "overlap_policy": "SKIP"},
        {"kind": faults.KILL, "function": "fanout"},
    ),
    # the worker dies right after it claimed the run: the scan makes it due again once the claim
    # expires, minutes later, after the resume
    "claimed": (
        {"cron": "*/10 * * * * *"},
        {
            "service": "dynamodb",
            "operation": "UpdateItem",
            "kind": faults.KILL_AFTER,
            "function": "worker",
            "table": "RunsTable",
        },
    ),
}


@pytest.mark.parametrize("kind", sorted(PAUSED_FIRE_KINDS))
def test_a_fire_inside_a_pause_whose_decision_died_is_not_delivered_after_the_resume(
    kind: str, stack: VirtualStack, receiver: Receiver
) -> None:
    """A fire dispatched ahead before a pause, whose time comes while the schedule is paused: the
    invocation that decides it at that time (its run's worker, or a gated fire's admission) dies
    before it read the schedule, so its message comes back after its visibility timeout (or its
    run is due again once its claim expired), after the resume. The fire time lies inside the
    pause: it is not delivered, and its Fire reads CANCELLED."""
    body, dies = PAUSED_FIRE_KINDS[kind]
    t = Tenant(receiver, f"pause-{kind}-died")
    s = created_then_paused(stack, t, **body)  # "endpoint_ids": []: every Endpoint of the App
    with faults.Faults() as f:
        f.on(**dies)  # the invocation that takes the fire at 10:00:20
        stack.run_until(at(21))
    assert f.injected, "the fault was not injected"
    stack.run_until(at(30))
    stack.clock.set(at(30.5))
    assert t.api("POST", f"/v1/schedules/{s['id']}/resume").status == 200
    until = 600 if kind == "claimed" else 260  # its claim expires, or its message comes back
    stack.run_until(at(until))
    assert t.delivered(s["id"]) == every(10, 1, 10) + every(10, 40, until)
    assert {f["fire_time"]: f["status"] for f in t.fires(s["id"])}[iso(at(20))] == "CANCELLED"


def test_a_broadcast_fire_whose_dispatch_died_before_its_fan_out_began_is_cancelled_by_a_pause(
    stack: VirtualStack, receiver: Receiver
) -> None:
    """The create dispatched the first fire of a schedule bound to every Endpoint and died before it
    handed the fire to the fan-out (no page of it exists). A pause cancels that Fire: it reads
    CANCELLED, not SCHEDULED for ever, and nothing of it is delivered."""
    t = Tenant(receiver, "broadcast-no-page")
    stack.run_until(at(0.5))
    with faults.Faults() as f:
        f.on("dynamodb", "Query", kind=faults.KILL_AFTER, function="api", table="FanoutPagesTable")
        with pytest.raises(faults.InvocationKilled):
            t.api("POST", "/v1/schedules", {"cron": "0 * * * * *"})  # every Endpoint of the App
    assert f.injected, "the fault was not injected"
    [s] = t.api("GET", "/v1/schedules").body["data"]
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    stack.run_until(at(5 * 60))
    assert t.delivered(s["id"]) == []
    fires = t.api("GET", f"/v1/schedules/{s['id']}/fires").body["data"]
    assert [(f["fire_time"], f["status"]) for f in fires] == [(iso(at(60)), "CANCELLED")]


def test_a_scan_tick_that_dies_while_catching_up_loses_no_fire_time(
    stack: VirtualStack, receiver: Receiver
) -> None:
    """The create's hand-over of its look-ahead window to the fan-out dies, so the schedule lags;
    the next scan tick catches it up and dies at its second send of delivery messages. Every fire
    time after the create has a Fire (run, or recorded MISSED)."""
    t = Tenant(receiver, "catch-up-died")
    stack.run_until(at(0.5))
    s = t.schedule(cron="*/5 * * * * *", missed_policy="SKIP")
    with faults.Faults() as window:
        window.on(kind=faults.KILL, function="fanout", times=5)
        stack.run_until(at(59))
    assert window.injected, "the fault was not injected"
    with faults.Faults() as f:
        f.on("sqs", "SendMessageBatch", kind=faults.KILL, function="scan", nth=2)
        with pytest.raises(faults.InvocationKilled):
            stack.run_until(at(61))
    assert f.injected, "the fault was not injected"
    stack.run_until(at(7 * 60))
    assert t.api("POST", f"/v1/schedules/{s['id']}/pause").status == 200
    stack.run_until(at(9 * 60))
    missing = sorted(set(every(5, 5, 7 * 60 - 5)) - {f["fire_time"] for f in t.fires(s["id"])})
    assert (missing, t.get(s["id"])["missed_left_out"]) == ([], 0)


def cancels_a_run(call: faults.Call) -> bool:
    """A write that ends a run cancelled (its status set in the update's values)."""
    return call.operation == "UpdateItem" and '"cancelled"' in json.dumps(call.params)


@pytest.mark.parametrize("ended_by", ["the check of late runs", "a pause"])
def test_a_fire_whose_run_was_ended_by_an_invocation_that_died_still_settles(
    ended_by: str, stack: VirtualStack, receiver: Receiver
) -> None:
    """SQS does not take the message of a daily fire's run, so no worker will ever settle its
    Fire. Something else ends the run and dies right after the run's write, before the Fire's:
    the scan's check of recent runs, which finds the run never taken after its time and under SKIP
    records the Fire MISSED, or a pause after the fire time, which cancels it (the client never
    hears back). The Fire still settles, MISSED or CANCELLED: it does not read RUNNING for ever."""
    t = Tenant(receiver, "ended-and-died")
    stack.run_until(at(0.5))
    s = t.schedule(cron="0 2 10 * * *", missed_policy="SKIP")  # daily at 10:02
    with faults.Faults() as lost:
        lost.on("sqs", "SendMessageBatch", function="scan")  # the run of 10:02 is never sent
        stack.run_until(at(61))
    assert lost.injected, "the fault was not injected"
    with faults.Faults() as f:
        if ended_by == "a pause":
            stack.run_until(at(150))
            f.on(kind=faults.KILL_AFTER, function="api", table="RunsTable", when=cancels_a_run)
            with pytest.raises(faults.InvocationKilled):
                t.api("POST", f"/v1/schedules/{s['id']}/pause")
        else:
            f.on(kind=faults.KILL_AFTER, function="scan", table="RunsTable", when=cancels_a_run)
            with pytest.raises(faults.InvocationKilled):
                stack.run_until(at(15 * 60))
    assert f.injected, "the fault was not injected"
    stack.run_until(at(14 * 60))  # the scan looks at a Fire still open 10 minutes past its time
    statuses = {f["fire_time"]: f["status"] for f in t.fires(s["id"])}
    assert statuses == {iso(at(120)): "CANCELLED" if ended_by == "a pause" else "MISSED"}
    assert t.delivered(s["id"]) == []


def test_a_fire_whose_worker_died_at_its_settle_until_the_message_was_dead_lettered_still_settles(
    stack: VirtualStack, receiver: Receiver
) -> None:
    """The worker withholds a fire's run (its schedule was paused), ends it cancelled and dies at its
    Fire, every time the message comes back, until SQS moves the message to the dead-letter queue.
    The dead-letter consumer finds the run final: it settles the Fire, which reads CANCELLED, not
    RUNNING for ever."""
    t = Tenant(receiver, "settle-dead-lettered")
    s = created_then_paused(stack, t, cron="*/10 * * * * *")
    with faults.Faults() as f:
        fire_at = str(clock.to_ms(at(20)))
        f.on(
            kind=faults.KILL,
            function="worker",
            table="FiresTable",
            when=lambda call: fire_at in json.dumps(call.params),
            times=5,
        )
        stack.run_until(at(17 * 60))  # five receives, 180 s apart, then the dead-letter queue
    assert len(f.injected) == 5, "the fault was not injected at each receive"
    statuses = {f["fire_time"]: f["status"] for f in t.fires(s["id"])}
    assert statuses[iso(at(20))] == "CANCELLED"
