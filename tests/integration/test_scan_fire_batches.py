"""The scan sends the runs of the fires it dispatches in one tick ten to a SendMessageBatch, and
moves each schedule past its fire only after its run's message was sent: a scan that dies before a
batch is sent leaves those schedules at their fire time, and the next tick delivers each fire once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import botocore.client
import pytest

from edgecron import clock
from edgecron.data import schedules as schedule_data
from edgecron.services.fires import dispatch
from edgecron_testing.harness import call_api, invoke, load_event, schedules_firing_once
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import Pump, new_app


class ScanDied(BaseException):
    """Stands for a scan Lambda killed mid-tick: nothing after this point runs."""


Call = tuple[str, dict[str, Any]]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Call]]:
    """Every AWS call made, in order: (operation, parameters)."""
    seen: list[Call] = []
    original = botocore.client.BaseClient._make_api_call

    def call(self: Any, operation: str, params: Any) -> Any:
        seen.append((operation, params))
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", call)
    yield seen


def schedules_firing_together(receiver: Receiver, name: str, n: int) -> tuple[str, str, int, list[str]]:
    """(app id, endpoint id, fire time, schedule ids): n schedules firing once at the same second,
    created beyond the look-ahead, so the scan dispatches them; the clock stands at their fire time."""
    app_id, key = new_app(name)
    endpoint_id = call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url(f"/{name}")}).body[
        "id"
    ]
    fire_at, ids = schedules_firing_once(key, str(endpoint_id), n)
    clock.set_clock(clock.FixedClock(fire_at))
    return app_id, str(endpoint_id), clock.to_ms(fire_at), ids


def sent_batches(calls: list[Call]) -> list[tuple[int, str]]:
    """(position among the calls, body) of each delivery message sent."""
    return [
        (i, entry["MessageBody"])
        for i, (operation, params) in enumerate(calls)
        if operation == "SendMessageBatch" and "DeliveryQueue" in params["QueueUrl"]
        for entry in params["Entries"]
    ]


def advanced_at(calls: list[Call], schedule_id: str) -> list[int]:
    """Positions of the conditional updates that moved the schedule's next fire time."""
    return [
        i
        for i, (operation, params) in enumerate(calls)
        if operation == "UpdateItem"
        and params["Key"].get("schedule_id") == {"S": schedule_id}
        and "next_fire_at" in str(params.get("ExpressionAttributeNames", {}).values())
    ]


def test_the_scan_sends_the_runs_of_a_ticks_fires_ten_to_a_request(
    receiver: Receiver, pump: Pump, calls: list[Call]
) -> None:
    _, endpoint_id, fire_ms, ids = schedules_firing_together(receiver, "fire-batches", 25)
    calls.clear()
    result = invoke("scan", load_event("scan.json"))
    assert result["fires_dispatched"] == 25
    requests = [params for operation, params in calls if operation == "SendMessageBatch"]
    assert [len(params["Entries"]) for params in requests] == [10, 10, 5]
    sent = sent_batches(calls)
    for schedule_id in ids:
        run_id = dispatch.run_id_for(schedule_id, fire_ms, endpoint_id)
        [sent_at] = [i for i, body in sent if run_id in body]
        [moved_at] = advanced_at(calls, schedule_id)
        assert sent_at < moved_at, "the schedule moved past its fire before its run was sent"
    pump.deliveries(until=lambda: len(receiver.received("/fire-batches")) >= 25)
    assert len(receiver.received("/fire-batches")) == 25


def test_a_scan_that_dies_before_sending_leaves_its_fires_to_the_next_tick_which_delivers_each_once(
    receiver: Receiver, pump: Pump, calls: list[Call], monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id, _, fire_ms, ids = schedules_firing_together(receiver, "fire-batch-died", 12)
    original = botocore.client.BaseClient._make_api_call

    def dies_sending(self: Any, operation: str, params: Any) -> Any:
        if operation == "SendMessageBatch":
            raise ScanDied
        return original(self, operation, params)

    with monkeypatch.context() as patch:
        patch.setattr(botocore.client.BaseClient, "_make_api_call", dies_sending)
        with pytest.raises(ScanDied):
            invoke("scan", load_event("scan.json"))
    stored = [schedule_data.get_timed(app_id, schedule_id, consistent=True) for schedule_id in ids]
    assert all(s is not None and s.next_fire_at == fire_ms for s in stored), "moved past an unsent fire"
    invoke("scan", load_event("scan.json"))
    pump.deliveries(until=lambda: len(receiver.received("/fire-batch-died")) >= 12)
    pump.deliveries(quiet_for=0.5)  # any second message of a run comes now
    got = receiver.received("/fire-batch-died")
    assert len(got) == 12 and len({r.headers["webhook-id"] for r in got}) == 12
    for schedule_id in ids:
        schedule = schedule_data.get_timed(app_id, schedule_id, consistent=True)
        assert schedule is not None and schedule.next_fire_at == fire_ms + 86_400_000
