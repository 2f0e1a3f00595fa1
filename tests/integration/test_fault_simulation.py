"""A seeded fault-injection simulation: a workload of direct runs (due now, delayed, cancelled) and
Events fanned out by filter, from a client that retries every create with the same Idempotency-Key
until it is acknowledged, while the handlers' AWS calls fail at random before their effect, after it,
or kill the invocation (edgecron_testing.faults); SQS gives a killed batch again after its visibility
timeout, and scan ticks run between the requests. Then the faults stop, the system quiesces, and what
a user can observe is checked:

- every acknowledged object exists once, and nothing else was made;
- every run is terminal;
- every Event reached exactly its matching Endpoints, one run each;
- no run was delivered after its cancel returned;
- every HTTP call a receiver saw is a recorded attempt (or a recorded lost attempt);
- usage counts one trigger per acknowledged Event and per acknowledged direct run, exactly.

The App has a quota on odd seeds (its direct runs are counted by the transaction that stores them)
and none on even ones (the scan's check of recent runs counts them). Besides the faults, a scan tick
is sometimes run twice in a row (a duplicated tick), and a consumer sometimes fails to delete a
message it handled (SQS gives it again after its visibility timeout).

The same seed gives the same workload, and each call the same fault decision (drawn from the seed,
the call's kind and how many calls of that kind came before it).
A few seeds run here; `make soak` runs many (EDGECRON_SOAK_SEEDS=n: seeds 1 to n).

One Endpoint answers 500 to everything: its runs retry (3 attempts, 5 s apart) and wait as dead
letters, and the client replays some of them.

Not exercised here: schedules and their Fires (every-minute, every-few-seconds, broadcast, paused and
resumed), a scan outage with a deploy, and two
scan ticks that overlap in time (integration/test_usage_exact.py covers an overlapping check)."""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from edgecron import clock
from edgecron_testing import faults
from edgecron_testing.harness import ApiResponse, call_api, invoke, load_event, sqs_event, timeout_sec
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import ADMIN_KEY, Pump, app_runs, new_app, queue

FILTERS = {
    "invoices": ["invoice.*"],
    "all": ["*"],
    "users": ["user.created"],
    "direct-only": [],
    "failing": [],  # answers 500 to every request: its runs retry, then wait as dead letters
}
EVENT_NAMES = ["invoice.paid", "invoice.voided", "user.created", "order.shipped"]
TERMINAL = {"success", "failed", "dead_letter", "cancelled"}
FAULTED = ("api", "worker", "fanout", "scan")


def subscribes(pattern: str, name: str) -> bool:
    """The filter rule, written apart from the code under test: a name, `prefix.*`, or `*` for all."""
    return pattern in ("*", name) or (pattern.endswith(".*") and name.startswith(pattern[:-1]))


def seeds() -> list[int]:
    soak = int(os.environ.get("EDGECRON_SOAK_SEEDS", "0") or 0)
    return list(range(1, soak + 1)) if soak else [1, 2]


@dataclass
class Outcome:
    seed: int
    aws_calls: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    runs: int = 0
    events: int = 0
    deliveries: int = 0
    client_retries: int = 0
    replays: int = 0
    violations: list[str] = field(default_factory=list)

    def summary(self) -> tuple[Any, ...]:
        """What must repeat for the same seed: the workload's objects and the verdict. (The faults
        repeat too from a fresh process; within one, the second run meets warm caches, so makes
        fewer calls, e.g. no KMS decrypt of a signing key, and meets the faults of fewer calls.)"""
        return (self.seed, self.runs, self.events, self.violations)


class Simulation:
    def __init__(self, seed: int, receiver: Receiver) -> None:
        self.rng = random.Random(seed)
        self.undeleted = random.Random(seed * 31)  # apart from the workload's draws
        self.outcome = Outcome(seed)
        self.receiver = receiver
        self.pump = Pump()
        self.clock = clock.FixedClock(datetime.now(UTC).replace(microsecond=0))
        clock.set_clock(self.clock)
        self.app_id, self.key = new_app(f"sim-{seed}")
        if seed % 2:
            resp = call_api(
                "PUT", f"/v1/apps/{self.app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": 1_000_000}
            )
            assert resp.status == 200, resp.body
        self.endpoints: dict[str, str] = {}  # endpoint id -> its filter name
        resp = call_api(
            "POST",
            "/v1/retry-policies",
            key=self.key,
            body={"max_attempts": 3, "base_delay_sec": 5, "max_delay_sec": 5},
        )
        assert resp.status == 201, resp.body
        policy_id = resp.body["id"]
        receiver.script("/failing", *[Reply(500)] * 10_000)
        for name, filters in FILTERS.items():
            body: dict[str, Any] = {"url": receiver.url(f"/{name}"), "filter_events": filters}
            if name == "failing":
                body["retry_policy_id"] = policy_id
            resp = call_api("POST", "/v1/endpoints", key=self.key, body=body)
            assert resp.status == 201, resp.body
            self.endpoints[resp.body["id"]] = name
        self.direct: dict[str, str] = {}  # acknowledged direct run id -> endpoint id
        self.events: dict[str, str] = {}  # acknowledged event id -> name
        self.cancelled_at: dict[str, float] = {}  # run id -> when (real time) its cancel returned
        self.serial = 0

    # --- the client ----------------------------------------------------------------------------
    def request(
        self, method: str, path: str, body: Any = None, idem: str | None = None
    ) -> ApiResponse | None:
        """One request as a client makes it: a killed or failed request is retried with the same
        Idempotency-Key (after the dead request's lease, when the key is busy), up to 8 times."""
        headers = {"Idempotency-Key": idem} if idem else None
        for attempt in range(8):
            if attempt:
                self.outcome.client_retries += 1
            try:
                resp = call_api(method, path, key=self.key, body=body, headers=headers)
            except faults.InvocationKilled:
                self.clock.advance(timeout_sec("api") + 1)
                continue
            if resp.status >= 500 or resp.status == 429:
                continue
            if resp.status == 409 and resp.body["error"]["code"] == "IDEMPOTENCY_IN_PROGRESS":
                self.clock.advance(timeout_sec("api") + 1)
                continue
            return resp
        return None

    def create_direct(self) -> None:
        endpoint_id = self.rng.choice(sorted(self.endpoints))
        body: dict[str, Any] = {"endpoint_id": endpoint_id, "payload": {"n": self.serial}}
        if self.rng.random() < 0.4:
            body["delay_sec"] = self.rng.choice([5, 30, 120, 900])
        self.serial += 1
        resp = self.request("POST", "/v1/task-runs", body, idem=f"run-{self.serial}")
        assert resp is not None and resp.status == 201, (resp and resp.body, body)
        self.direct[resp.body["id"]] = endpoint_id
        if "delay_sec" in body and body["delay_sec"] >= 120 and self.rng.random() < 0.5:
            self.cancel(resp.body["id"])

    def cancel(self, run_id: str) -> None:
        resp = self.request("POST", f"/v1/task-runs/{run_id}/cancel")
        if resp is not None and resp.status == 200:
            self.cancelled_at[run_id] = time.time()

    def replay_dead_letter(self, *, every: bool = False) -> None:
        """Replay one of the failing Endpoint's runs that waits as a dead letter, if one does
        (`every`: each of them)."""
        failing = [rid for rid, ep in self.direct.items() if self.endpoints[ep] == "failing"]
        for run_id in failing:
            resp = self.request("GET", f"/v1/task-runs/{run_id}")
            if resp is not None and resp.status == 200 and resp.body["status"] == "dead_letter":
                answer = self.request("POST", f"/v1/dead-letters/{run_id}/replay")
                if answer is not None and answer.status == 200:
                    self.outcome.replays += 1
                if not every:
                    return

    def publish(self) -> None:
        name = self.rng.choice(EVENT_NAMES)
        self.serial += 1
        resp = self.request(
            "POST", "/v1/events", {"name": name, "payload": {"n": self.serial}}, f"evt-{self.serial}"
        )
        assert resp is not None and resp.status == 202, resp and resp.body
        self.events[resp.body["id"]] = name

    # --- the platform --------------------------------------------------------------------------
    def tick(self, *, seconds: float) -> None:
        """Time passes: the queues' consumers run, sometimes a scan."""
        self.clock.advance(seconds)
        if seconds >= 5:  # SQS's delays (retries) run out too
            faults.let_sqs_time_pass()
        for _ in range(3):
            moved = self.consume("FanoutQueue", "fanout")
            moved += self.consume("DeliveryQueue", "worker")
            if not moved:
                break
        if self.rng.random() < 0.3:
            self.scan()
            if self.rng.random() < 0.2:  # a duplicated tick
                self.scan()

    def consume(self, logical_id: str, function: str) -> int:
        """One invocation of the queue's consumer, one message at a time (so the calls it makes come
        in one order): as the event source mapping runs it, a message whose record failed, or whose
        invocation failed or died, stays in the queue for its visibility timeout."""
        info = queue(logical_id)
        got = self.pump.sqs.receive_message(
            QueueUrl=info.url, MaxNumberOfMessages=1, WaitTimeSeconds=0, AttributeNames=["All"]
        )
        messages = got.get("Messages", [])
        if not messages:
            return 0
        try:
            result = invoke(function, sqs_event(messages, info.arn)) or {}
        except (Exception, faults.InvocationKilled):
            return 1
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        for m in messages:
            if m["MessageId"] not in failed and self.undeleted.random() >= 0.05:  # else its delete was lost
                self.pump.sqs.delete_message(QueueUrl=info.url, ReceiptHandle=m["ReceiptHandle"])
        return 1

    def scan(self) -> None:
        with contextlib.suppress(faults.InvocationKilled):  # the next tick does its work
            invoke("scan", load_event("scan.json"))

    def quiesce(self) -> None:
        """No more faults: let every delay, visibility timeout and claim run out, until the queues
        are empty and every run is terminal."""
        for _ in range(40):
            self.clock.advance(400)
            faults.let_sqs_time_pass()
            self.scan()
            while self.consume("FanoutQueue", "fanout") + self.consume("DeliveryQueue", "worker"):
                pass
            if all(run.status in TERMINAL for run in app_runs(self.app_id)) and not self.queued():
                return

    def queued(self) -> int:
        return sum(self.pump.depth(q) for q in ("FanoutQueue", "DeliveryQueue"))

    # --- what a user observes ------------------------------------------------------------------
    def check(self) -> None:
        v = self.outcome.violations
        runs = app_runs(self.app_id)
        self.outcome.runs = len(runs)
        self.outcome.events = len(self.events)
        by_source = Counter(run.source for run in runs)
        direct = {run.run_id: run for run in runs if run.source == "direct"}
        if set(direct) != set(self.direct):
            v.append(f"direct runs stored {sorted(direct)} != acknowledged {sorted(self.direct)}")
        for run in runs:
            if run.status not in TERMINAL:
                v.append(f"run {run.run_id} is {run.status}")
        listed_events = self.listed_events()
        if sorted(listed_events) != sorted(self.events):
            v.append(f"events stored {sorted(listed_events)} != acknowledged {sorted(self.events)}")
        for event_id, name in self.events.items():
            want = sorted(
                ep for ep, f in self.endpoints.items() if any(subscribes(p, name) for p in FILTERS[f])
            )
            got = sorted(
                run.endpoint_id for run in runs if run.source == "event" and run.source_id == event_id
            )
            if got != want:
                v.append(f"event {event_id} ({name}) fanned out to {got}, matching {want}")
        seen = Counter(request.headers.get("webhook-id", "") for request in self.receiver.requests)
        self.outcome.deliveries = sum(seen.values())
        for run_id, cancelled in self.cancelled_at.items():
            late = [
                r
                for r in self.receiver.requests
                if r.headers.get("webhook-id") == run_id and r.at > cancelled
            ]
            if late:
                v.append(f"run {run_id} delivered after its cancel returned")
        for run_id, calls in seen.items():
            attempts = call_api("GET", f"/v1/task-runs/{run_id}/attempts", key=self.key).body["data"]
            if calls > len(attempts):
                v.append(f"run {run_id}: the receiver saw {calls} calls, {len(attempts)} recorded")
        usage = call_api("GET", "/v1/usage", key=self.key).body
        if usage["event"] != len(self.events):
            v.append(f"usage counts {usage['event']} events for {len(self.events)} acknowledged")
        if usage["direct"] != len(self.direct):
            v.append(f"usage counts {usage['direct']} direct runs for {len(self.direct)} acknowledged")
        if by_source.get("schedule"):
            v.append("schedule runs appeared without a schedule")

    def listed_events(self) -> list[str]:
        ids: list[str] = []
        cursor = None
        while True:
            query = {"limit": "100", **({"cursor": cursor} if cursor else {})}
            body = call_api("GET", "/v1/events", key=self.key, query=query).body
            ids += [item["id"] for item in body["data"]]
            cursor = body.get("next_cursor")
            if not cursor:
                return ids


def simulate(seed: int, operations: int = 24, rate: float = 0.04) -> Outcome:
    receiver = Receiver()
    try:
        return _simulate(seed, receiver, operations, rate)
    finally:
        receiver.close()


def _simulate(seed: int, receiver: Receiver, operations: int, rate: float) -> Outcome:
    sim = Simulation(seed, receiver)
    with faults.Faults() as f:
        f.random(random.Random(seed * 7919), rate, functions=FAULTED)
        for _ in range(operations):
            roll = sim.rng.random()
            if roll < 0.5:
                sim.create_direct()
            elif roll < 0.62:
                sim.replay_dead_letter()
            else:
                sim.publish()
            sim.tick(seconds=sim.rng.choice([0, 1, 5, 20, 70]))
        sim.clock.advance(60)  # the failing Endpoint's last retries fall due
        faults.let_sqs_time_pass()
        sim.tick(seconds=0)
        sim.replay_dead_letter(every=True)
        f.stop()
        sim.quiesce()
        sim.check()
        sim.outcome.aws_calls = len(f.calls)
        sim.outcome.faults = f.by_kind()
    return sim.outcome


@pytest.mark.index_lag(0)
@pytest.mark.parametrize("seed", seeds())
def test_nothing_acknowledged_is_lost_doubled_or_invented_under_faults(seed: int) -> None:
    outcome = simulate(seed)
    print(
        f"seed {seed}: {outcome.aws_calls} AWS calls, faults {outcome.faults}, {outcome.runs} runs, "
        f"{outcome.events} events, {outcome.deliveries} deliveries, {outcome.client_retries} client retries, "
        f"{outcome.replays} dead-letter replays"
    )
    assert sum(outcome.faults.values()) > 0, "no fault was injected: the simulation proves nothing"
    assert outcome.violations == []


@pytest.mark.index_lag(0)
def test_the_same_seed_gives_the_same_outcome() -> None:
    first = simulate(1, operations=12)
    second = simulate(1, operations=12)
    assert first.summary() == second.summary()
