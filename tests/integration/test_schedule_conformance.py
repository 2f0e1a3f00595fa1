"""The schedule engine against the reference model of what a user observes
(edgecron_testing.schedule_model): random timelines of waits, pauses, resumes and timing edits,
driven through the API on a virtual clock that moves the scan, the queues and the workers together.
After every step the receiver's deliveries (named by their fire-time header), `next_fire_time`,
`last_fire_time`, `preview` and the Fires list must read what the model says."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock
from edgecron_testing.harness import call_api
from edgecron_testing.inprocess import due_walk_left_at, new_app
from edgecron_testing.receiver import Receiver
from edgecron_testing.schedule_model import ScheduleModel
from edgecron_testing.virtual_time import VirtualStack, sqs_on_clock

T0 = datetime(2026, 12, 4, 8, 0, 0, tzinfo=UTC)
CADENCES = [2, 5, 10, 15, 30]
STEPS = 8
SEEDS = [int(s) for s in os.environ.get("EDGECRON_CONFORMANCE_SEEDS", "1,2,3").split(",")]


def iso(ms: int | None) -> str | None:
    return None if ms is None else clock.iso(clock.from_ms(ms))


class ScheduleConformance:
    """One App, one Endpoint on a real receiver, one schedule; the model follows every action."""

    stack: VirtualStack
    receiver: Receiver

    def __init__(self) -> None:
        self.key = ""
        self.path = ""
        self.schedule_id = ""
        self.model: ScheduleModel | None = None

    @property
    def now_ms(self) -> int:
        return clock.to_ms(self.stack.now)

    def api(self, method: str, path: str, body: dict[str, Any] | None = None, **kw: Any) -> Any:
        return call_api(method, path, key=self.key, body=body, **kw)

    def create(self, every: int, offset: int) -> None:
        start = self.stack.now.replace(microsecond=0) + timedelta(seconds=offset, milliseconds=500)
        self.stack.run_until(start - timedelta(milliseconds=500))
        self.stack.clock.set(start)
        _, self.key = new_app("conformance")
        self.path = f"/conformance/{self.stack.now.timestamp():.0f}"
        endpoint = self.api("POST", "/v1/endpoints", {"url": self.receiver.url(self.path)}).body["id"]
        resp = self.api("POST", "/v1/schedules", {"cron": f"*/{every} * * * * *", "endpoint_ids": [endpoint]})
        assert resp.status == 201, resp.body
        self.schedule_id = resp.body["id"]
        self.model = ScheduleModel(self.now_ms, every)

    def _act_at_half_second(self) -> None:
        """Actions land half a second after a tick, so no fire time ties with one."""
        self.stack.clock.set(self.stack.now.replace(microsecond=0) + timedelta(milliseconds=500))

    def wait(self, seconds: int) -> None:
        self.stack.run_until(self.stack.now.replace(microsecond=0) + timedelta(seconds=seconds))

    def pause(self) -> None:
        assert self.model is not None
        self._act_at_half_second()
        assert self.api("POST", f"/v1/schedules/{self.schedule_id}/pause").status == 200
        self.model.pause(self.now_ms)

    def resume(self) -> None:
        assert self.model is not None
        self._act_at_half_second()
        assert self.api("POST", f"/v1/schedules/{self.schedule_id}/resume").status == 200
        self.model.resume(self.now_ms)

    def edit_timing(self, every: int) -> None:
        assert self.model is not None
        self._act_at_half_second()
        resp = self.api("PATCH", f"/v1/schedules/{self.schedule_id}", {"cron": f"*/{every} * * * * *"})
        assert resp.status == 200, resp.body
        self.model.edit(self.now_ms, every)

    def observes_the_model(self) -> None:
        if self.model is None:
            return
        now = self.now_ms
        delivered = sorted(
            r.headers["edgecron-fire-time"]
            for r in self.receiver.requests
            if r.path == self.path and r.headers.get("edgecron-schedule-id") == self.schedule_id
        )
        assert delivered == [iso(t) for t in self.model.delivered_by(now)]
        got = self.api("GET", f"/v1/schedules/{self.schedule_id}", query={"preview": "3"}).body
        upcoming = self.model.upcoming(now, 3)
        assert got["next_fire_time"] == iso(upcoming[0] if upcoming else None), got
        assert got["preview"] == [iso(t) for t in upcoming], got
        assert got["last_fire_time"] == iso(self.model.last_fire(now)), got
        assert got["consecutive_failures"] == 0
        fires = self.api("GET", f"/v1/schedules/{self.schedule_id}/fires", query={"limit": "50"}).body["data"]
        shown = {f["fire_time"]: f for f in fires}
        for t in self.model.delivered_by(now)[-10:]:  # the newest ones are on the first page
            fire = shown.get(iso(t))
            assert fire is not None and fire["status"] in ("RUNNING", "COMPLETED"), (iso(t), fire)
            assert [r["status"] for r in fire["runs"]] in (["running"], ["success"]), fire
        for fire in fires:
            if fire["status"] == "CANCELLED":
                assert fire["started_at"] is None and fire["duration_ms"] is None, fire
            if fire["duration_ms"] is not None:
                assert fire["duration_ms"] >= 0, fire


@pytest.fixture
def virtual_stack() -> Iterator[VirtualStack]:
    fixed = clock.FixedClock(T0)
    with sqs_on_clock(fixed):
        due_walk_left_at(clock.to_ms(T0) - 60_000)
        yield VirtualStack(fixed)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_schedule_engine_conforms_to_the_reference_model(
    seed: int, virtual_stack: VirtualStack, receiver: Receiver
) -> None:
    """A seeded random timeline (the same seed, the same timeline): after each step every
    observable must read what the model says; a failure names the steps taken so far."""
    rng = random.Random(seed)
    ScheduleConformance.stack = virtual_stack
    ScheduleConformance.receiver = receiver
    machine = ScheduleConformance()
    steps: list[str] = []
    every = rng.choice(CADENCES)
    machine.create(every, rng.randrange(60))
    steps.append(f"create every {every}s")
    for _ in range(STEPS):
        choice = rng.choice(["wait", "wait", "pause", "resume", "edit"])
        if choice == "wait":
            seconds = rng.randint(1, 30)
            machine.wait(seconds)
            steps.append(f"wait {seconds}s")
        elif choice == "pause":
            machine.pause()
            steps.append("pause")
        elif choice == "resume":
            machine.resume()
            steps.append("resume")
        else:
            every = rng.choice(CADENCES)
            machine.edit_timing(every)
            steps.append(f"edit to every {every}s")
        try:
            machine.observes_the_model()
        except AssertionError as failure:
            raise AssertionError(f"after {steps} at {virtual_stack.now.isoformat()}: {failure}") from None
