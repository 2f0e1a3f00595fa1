"""Events an earlier release left with a pending fan-out and no fan-out wake time (stored before the
`fanout_wake` index existed) are re-driven: the deploy's catch-up gives them a wake time, once per
stack, a page at a time and resumed by the next deploy, and the scan then fans them out."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from edgecron import clock, ids
from edgecron.data.expiry import expires_at_s
from edgecron.data.models import DueMarkModel, EventModel
from edgecron.services import events
from edgecron_testing.harness import call_api, invoke, load_event
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import Pump, new_app


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def cfn() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(autouse=True)
def _walk_not_run() -> None:
    """A stack whose deploys never ran the walk (the mark is shared by every test of the process)."""
    DueMarkModel("#scan", "due").update(
        [DueMarkModel.fanout_woken_at.remove(), DueMarkModel.fanout_wake_from.remove()]
    )


def _endpoint(key: str, url: str, filters: list[str]) -> str:
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url, "filter_events": filters})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def _legacy_event(app_id: str, name: str, now_ms: int) -> str:
    """An Event as the earlier release stored it: pending, no page recorded, no wake time."""
    event_id = ids.new_id("evt", now_ms)
    EventModel(
        app_id=app_id,
        event_id=event_id,
        name=name,
        payload={"legacy": True},
        fanout_status="pending",
        created_at=now_ms,
        expires_at=expires_at_s(now_ms),
    ).save()
    return event_id


def test_a_deploy_re_drives_a_fan_out_left_pending_without_a_wake_time(
    receiver: Receiver, pump: Pump, cfn: Receiver
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    app_id, key = new_app("legacy-fanout")
    _endpoint(key, receiver.url("/invoices"), ["invoice.*"])
    _endpoint(key, receiver.url("/users"), ["user.created"])
    event_id = _legacy_event(app_id, "invoice.paid", clock.to_ms(fixed.now()) - 3_600_000)
    answer = invoke("compensation", load_event("cfn-update.json") | {"ResponseURL": cfn.url("/cfn")})
    assert answer["Status"] == "SUCCESS"
    invoke("scan", {"detail": {}})
    while pump.once("FanoutQueue", "fanout"):
        pass
    pump.deliveries()
    [request] = receiver.received("/invoices")
    assert receiver.received("/users") == []
    assert call_api("GET", f"/v1/events/{event_id}", key=key).body["fanout_status"] == "done"
    invoke("scan", {"detail": {}})  # woken once: fanned out once
    pump.deliveries()
    assert len(receiver.received("/invoices")) == 1
    assert request.headers.get("webhook-id")


def test_the_walk_stops_at_its_deadline_and_the_next_deploy_goes_on_from_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    app_id, _ = new_app("legacy-fanout-walk")
    now_ms = clock.to_ms(fixed.now())
    mine = {_legacy_event(app_id, "user.created", now_ms - 60_000) for _ in range(3)}
    monkeypatch.setattr(events, "WAKE_PAGE", 1)
    ticks = iter([0.0, 10.0])  # one page before the deadline of 5, then past it
    monkeypatch.setattr(clock, "monotonic", lambda: next(ticks, 10.0))
    first = events.wake_unwoken(now_ms, deadline=5.0)
    assert first["events_walk_done"] is False
    monkeypatch.setattr(clock, "monotonic", lambda: 0.0)
    second = events.wake_unwoken(now_ms, deadline=5.0)
    assert second["events_walk_done"] is True
    woken = {
        row.event_id
        for row in EventModel.query(app_id)
        if row.event_id in mine and row.fanout_wake_at is not None and row.fanout_shard is not None
    }
    assert woken == mine
    assert events.wake_unwoken(now_ms, deadline=5.0) == {"events_woken": 0, "events_walk_done": True}
