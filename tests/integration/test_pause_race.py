"""A pause (or delete) that lands while a scan is dispatching: once it has returned, nothing of the
schedule is delivered, whichever step of the dispatch it interrupted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock
from edgecron.data.models import FireModel
from edgecron.services.fires import dispatch
from edgecron_testing.harness import call_api, invoke, load_event
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import Pump, app_runs, new_app


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def due_soon_schedule(key: str, url: str) -> tuple[dict[str, Any], datetime]:
    """A schedule whose only fire of the day is 3 s from now, created while that fire was still beyond
    the look-ahead (so its creation dispatched nothing and the next scan will)."""
    fire = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    clock.set_clock(clock.ShiftedClock(fire - timedelta(minutes=10)))
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": url}).body["id"]
    resp = call_api(
        "POST",
        "/v1/schedules",
        key=key,
        body={"cron": f"{fire.second} {fire.minute} {fire.hour} * * *", "endpoint_ids": [ep]},
    )
    assert resp.status == 201, resp.body
    assert list(FireModel.query(resp.body["id"])) == []
    clock.set_clock(clock.SystemClock())
    return dict(resp.body), fire


def before_first_call(
    monkeypatch: pytest.MonkeyPatch, target: Any, name: str, action: Callable[[], None]
) -> list[int]:
    """Run `action` (the user's pause) right before the first call of target.name goes on."""
    original = getattr(target, name)
    calls: list[int] = []

    def interleaved(*args: Any, **kwargs: Any) -> Any:
        first = not calls
        calls.append(1)  # before the action: the pause itself may call target.name (placeholders)
        if first:
            action()
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, interleaved)
    return calls


def pause_of(key: str, schedule_id: str, verb: str) -> Callable[[], None]:
    def act() -> None:
        if verb == "pause":
            resp = call_api("POST", f"/v1/schedules/{schedule_id}/pause", key=key)
            assert resp.status == 200 and resp.body["status"] == "PAUSED", resp.body
        else:
            assert call_api("DELETE", f"/v1/schedules/{schedule_id}", key=key).status == 204

    return act


@pytest.mark.parametrize("verb", ["pause", "delete"])
@pytest.mark.parametrize(
    "moment",
    [
        "after_the_scan_read_the_schedule",  # before the Fire exists
        "after_the_fire_was_created",  # before its runs exist
    ],
)
def test_nothing_is_delivered_after_pause_or_delete_returned(
    moment: str, verb: str, receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id, key = new_app(f"race-{verb}")
    s, fire = due_soon_schedule(key, receiver.url("/race"))
    target = (dispatch, "dispatch_fire")
    if moment == "after_the_fire_was_created":
        target = (dispatch.run_data, "put_new")
    calls = before_first_call(monkeypatch, *target, pause_of(key, s["id"], verb))
    invoke("scan", load_event("scan.json"))
    assert calls, "the scan did not reach the interleaving point"
    monkeypatch.undo()
    pump.deliveries(quiet_for=max(1.0, fire.timestamp() - datetime.now(UTC).timestamp() + 1.5))
    assert receiver.received("/race") == []
    assert all(r.status == "cancelled" for r in app_runs(app_id))
    assert {f.status for f in FireModel.query(s["id"])} <= {"CANCELLED"}
    invoke("scan", load_event("scan.json"))  # a later scan does not bring it back
    pump.deliveries()
    assert receiver.received("/race") == []
