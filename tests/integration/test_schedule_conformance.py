"""The schedule engine against the reference model of what a user observes
(edgecron_testing.schedule_model): random timelines of waits, pauses, resumes, timing edits and
scan outages, driven through the API on a virtual clock that moves the scan, the queues and the
workers together, for a schedule with a start_at or an end_at (or neither) and either missed-fire
policy, with a receiver that fails some fire times (500, 503 or a timeout) for some of their
attempts under the schedule's retry policy. After every step the receiver's requests (named by their fire-time and
attempt headers), `status`, `pause_reason`, `consecutive_failures`, `next_fire_time`,
`last_fire_time`, `preview` and the Fires list with their statuses must read what the model says."""

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
from edgecron_testing.receiver import Received, Receiver, Reply
from edgecron_testing.schedule_model import ScheduleModel
from edgecron_testing.virtual_time import VirtualStack, sqs_on_clock

T0 = datetime(2026, 12, 4, 8, 0, 0, tzinfo=UTC)
# Fire times lie on a 5-second grid and retries come 7 or 14 s after a request: a retry and a fire
# time never share a second, so the order within a second never decides an outcome.
CADENCES = [5, 10, 15, 20, 30]
RETRY_DELAY_SEC = 7
STEPS = 12
SEEDS = [int(s) for s in os.environ.get("EDGECRON_CONFORMANCE_SEEDS", "2,8,13,21").split(",")]
TIMEOUT_MS = 500  # the Endpoint's per-attempt timeout; a "timeout" answer comes later than that
FAILURES = [Reply(500), Reply(503), Reply(200, delay_sec=0.8)]


class FailingReceiver:
    """How the receiver answers a timeline's fire times: each fire time's first k requests fail
    (k drawn once per fire time from the seed, each request failing with `rate`), with a 500, a 503
    or a timeout; the rest succeed."""

    def __init__(self, seed: int, rate: float) -> None:
        self.seed, self.rate = seed, rate
        self._failures: dict[int, int] = {}
        self._seen: dict[str, int] = {}

    def failures_of(self, fire_ms: int) -> int:
        if fire_ms not in self._failures:
            rng = random.Random(self.seed * 1_000_003 + fire_ms // 1000)
            k = 0
            while k < 5 and rng.random() < self.rate:
                k += 1
            self._failures[fire_ms] = k
        return self._failures[fire_ms]

    def reply(self, request: Received) -> Reply:
        fire_time = request.headers.get("edgecron-fire-time", "")
        n = self._seen[fire_time] = self._seen.get(fire_time, 0) + 1
        fire_ms = clock.to_ms(datetime.fromisoformat(fire_time))
        if n > self.failures_of(fire_ms):
            return Reply(200)
        return FAILURES[(fire_ms // 1000 + n) % len(FAILURES)]


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

    def create(
        self,
        every: int,
        offset: int,
        attempts: int,
        answers: FailingReceiver,
        window: tuple[int | None, int | None],
        missed_policy: str,
    ) -> None:
        """`window`: start_at and end_at in seconds after the create, or None."""
        start = self.stack.now.replace(microsecond=0) + timedelta(seconds=offset, milliseconds=500)
        self.stack.run_until(start - timedelta(milliseconds=500))
        self.stack.clock.set(start)
        _, self.key = new_app("conformance")
        self.path = f"/conformance/{self.stack.now.timestamp():.0f}"
        self.receiver.answer(self.path, answers.reply)
        endpoint = self.api(
            "POST", "/v1/endpoints", {"url": self.receiver.url(self.path), "timeout_ms": TIMEOUT_MS}
        ).body["id"]
        policy = self.api(
            "POST",
            "/v1/retry-policies",
            {"strategy": "fixed", "max_attempts": attempts, "base_delay_sec": RETRY_DELAY_SEC},
        ).body["id"]
        whole = start.replace(microsecond=0)
        bounds = [None if w is None else clock.to_ms(whole + timedelta(seconds=w)) for w in window]
        body: dict[str, Any] = {
            "cron": f"*/{every} * * * * *",
            "endpoint_ids": [endpoint],
            "retry_policy_id": policy,
            "missed_policy": missed_policy,
        }
        for name, bound in zip(("start_at", "end_at"), bounds, strict=True):
            if bound is not None:
                body[name] = iso(bound)
        resp = self.api("POST", "/v1/schedules", body)
        assert resp.status == 201, resp.body
        self.schedule_id = resp.body["id"]
        self.model = ScheduleModel(
            self.now_ms,
            every,
            attempts=attempts,
            retry_delay_sec=RETRY_DELAY_SEC,
            failures_of=answers.failures_of,
            start_ms=bounds[0],
            end_ms=bounds[1],
            missed_policy=missed_policy,
        )

    def outage(self, down: bool) -> None:
        """The scan stops (or starts again) being invoked from the next whole minute on."""
        assert self.model is not None
        self.stack.scan_down = down
        if down:
            self.model.scan_down(self.now_ms)
        else:
            self.model.scan_up(self.now_ms)

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
        seen = self.model.observe(now)
        requests = sorted(
            (r.headers["edgecron-fire-time"], int(r.headers["edgecron-attempt"]))
            for r in self.receiver.requests
            if r.path == self.path and r.headers.get("edgecron-schedule-id") == self.schedule_id
        )
        assert requests == sorted((iso(t), n) for t, n in seen.requests)
        got = self.api("GET", f"/v1/schedules/{self.schedule_id}", query={"preview": "3"}).body
        upcoming = seen.upcoming[:3]
        assert got["status"] == seen.status, got
        assert got["consecutive_failures"] == seen.consecutive_failures, got
        if seen.auto_paused:
            assert (got["pause_reason"] or "").startswith("3 fires in a row failed: "), got
        else:
            assert got["pause_reason"] is None, got
        assert got["next_fire_time"] == iso(upcoming[0] if upcoming else None), got
        assert got["preview"] == [iso(t) for t in upcoming], got
        assert got["last_fire_time"] == iso(seen.last_fire), got
        fires = self.api("GET", f"/v1/schedules/{self.schedule_id}/fires", query={"limit": "50"}).body["data"]
        shown = {f["fire_time"]: f for f in fires}
        for t in sorted(seen.fires)[-10:]:  # the newest ones are on the first page
            fire = shown.get(iso(t))
            assert fire is not None and fire["status"] == seen.fires[t], (iso(t), seen.fires[t], fire)
            runs = [r["status"] for r in fire["runs"]]
            assert (
                runs == [RUN_STATUS[seen.fires[t]]]
                or (seen.fires[t] == "RUNNING" and runs in (["running"], ["retry_scheduled"]))
                or (seen.fires[t] == "MISSED" and runs == [])
            ), (iso(t), fire)
        oldest = min(seen.fires, default=now)
        for fire in fires:
            at_ms = clock.to_ms(datetime.fromisoformat(fire["fire_time"]))
            if at_ms <= now and at_ms >= oldest and at_ms not in seen.fires:
                # dispatched ahead, not run: the schedule was paused at its time
                assert fire["status"] == "CANCELLED", (fire, seen.fires)
            if fire["status"] == "CANCELLED" and at_ms not in seen.fires:
                assert fire["started_at"] is None and fire["duration_ms"] is None, fire
            if fire["duration_ms"] is not None:
                assert fire["duration_ms"] >= 0, fire


RUN_STATUS = {
    "COMPLETED": "success",
    "FAILED": "dead_letter",
    "RUNNING": "running",
    "CANCELLED": "cancelled",
    "MISSED": "cancelled",
}


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
    attempts = rng.choice([1, 2, 3])
    rate = rng.choice([0.0, 0.3, 0.6, 0.9])
    window = rng.choice([(None, None), (rng.randint(0, 40), None), (None, rng.randint(60, 240))])
    missed_policy = rng.choice(["RUN_ONCE", "SKIP"])
    machine.create(every, rng.randrange(60), attempts, FailingReceiver(seed, rate), window, missed_policy)
    steps.append(
        f"create every {every}s, {attempts} attempts, receiver failing {rate:.0%}, "
        f"window {window}, {missed_policy}"
    )
    down = False
    for _ in range(STEPS):
        choice = rng.choice(["wait", "wait", "wait", "pause", "resume", "edit", "outage"])
        if choice == "edit" and down:
            choice = "wait"  # a timing edit of a schedule that is behind: not in the model
        if choice == "wait":
            seconds = rng.randint(1, 40 if not down else 90)
            machine.wait(seconds)
            steps.append(f"wait {seconds}s")
        elif choice == "pause":
            machine.pause()
            steps.append("pause")
        elif choice == "resume":
            machine.resume()
            steps.append("resume")
        elif choice == "edit":
            every = rng.choice(CADENCES)
            machine.edit_timing(every)
            steps.append(f"edit to every {every}s")
        else:
            down = not down
            machine.outage(down)
            steps.append("scan outage begins" if down else "scan outage ends")
        try:
            machine.observes_the_model()
        except AssertionError as failure:
            raise AssertionError(f"after {steps} at {virtual_stack.now.isoformat()}: {failure}") from None
    if down:  # the outage ends: what it left behind is caught up by the policy
        machine.outage(False)
        machine.wait(70)
        steps.append("scan outage ends, wait 70s")
        try:
            machine.observes_the_model()
        except AssertionError as failure:
            raise AssertionError(f"after {steps} at {virtual_stack.now.isoformat()}: {failure}") from None
