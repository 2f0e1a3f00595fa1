"""A seeded fault-injection simulation: a workload of direct runs (due now, delayed, cancelled),
Events fanned out by filter and schedules (one every minute, one every 5 or 10 s, one broadcast to
every Endpoint of the App, each RUN_ONCE or SKIP) that the client pauses and resumes at random times,
from a client that retries every request with the same Idempotency-Key until it is answered, while
the handlers' AWS calls fail at random before their effect, after it, or kill the invocation
(edgecron_testing.faults; a scan tick's and a deploy's calls at a lower rate, see `rates_for`).

Time is a virtual clock that moves moto's SQS too (delays and visibility timeouts run out by it: a
killed batch comes back after its visibility timeout) and goes on while the client waits out a
killed request. The queues' consumers run every 5 s of it, the scan at every whole minute
(EventBridge's `rate(1 minute)`), sometimes twice (a duplicated tick), except during a scan outage of
3 to 5 minutes near whose end a deploy runs the compensation function (its custom-resource Create or
Update event; a failed or killed invocation is run again, as Lambda retries an asynchronous
invocation). A consumer sometimes fails to delete a message it handled (SQS gives it again after its
visibility timeout).

Then the faults stop, the scan ticks for 90 s, every schedule is paused (the point after which
nothing may fire), the system quiesces, and what a user can observe is checked against rules written
here, apart from the code under test (docs/time-rules.md, "What a schedule promises"):

- every acknowledged object exists once, and nothing else was made;
- every run is terminal;
- every Event reached exactly its matching Endpoints, one run each;
- no run was delivered after its cancel returned;
- every HTTP call a receiver saw is a recorded attempt (or a recorded lost attempt);
- usage counts one trigger per acknowledged Event and per acknowledged direct run, exactly, and
  one per dispatched schedule fire: exactly the Fires of listed Endpoints that have runs, and for
  the broadcast at least its Fires that settled from their runs and at most those that have runs
  (what a user sees does not tell a broadcast Fire cancelled before its first page from one
  cancelled after it);
- a schedule's Fires (GET /v1/schedules/{id}/fires): one per fire time, each on the schedule's grid
  (written here as whole UTC seconds modulo a period), none manual, each settled; one run per
  (Fire, Endpoint), no run without a Fire, and a Fire that ran has exactly its Endpoints' runs (a
  broadcast's: every Endpoint of the App);
- the state of a schedule at a fire time is taken from the client's actions: a request's effect
  lies anywhere between its first attempt and its answer (2 s either side), and one that got no
  answer may or may not have taken effect. Every fire time at which the schedule was certainly
  ACTIVE has a Fire: one that ran, one CANCELLED by a pause that came after it (a pause cancels the
  runs waiting past their time), or one MISSED; beyond the newest 100 a catch-up records, the fire
  times without one are at most what `missed_left_out` counts;
- a MISSED fire time is not delivered and has no run that made a request; it is not one a scan tick
  that met no fault dispatched ahead (within the minute before it, the schedule certainly ACTIVE
  from that tick to the fire time, no message of that Fire handled by an invocation that met a
  fault); under RUN_ONCE, the fire time after a MISSED one has a Fire, or a pause came between;
- no fire time at which the schedule was certainly not ACTIVE is delivered, and none has a Fire but
  a CANCELLED one (dispatched ahead before a pause), also when the invocation that decided it at
  its time met a fault and its message was handled after a resume.

The App has a quota on odd seeds (its direct runs are counted by the transaction that stores them)
and none on even ones (the scan's check of recent runs counts them).

The same seed gives the same workload, and each call the same fault decision (drawn from the seed,
the call's kind and how many calls of that kind came before it); seed n starts at its own instant.
A few seeds run here; `make soak` runs many (EDGECRON_SOAK_SEEDS=n: seeds 1 to n).

One Endpoint answers 500 to every run but a schedule's: its runs retry (3 attempts, 5 s apart) and
wait as dead letters, and the client replays some of them.

Not exercised here: failing schedule deliveries (retries of a schedule run,
FAILED Fires, the auto-pause after 3 of them), timing edits, deletes, one-time schedules, manual
triggers, time zones, jitter, overlap policies, flow control, start_at/end_at, a receiver that is
slow or times out, and two scan ticks that overlap in time (integration/test_usage_exact.py covers
an overlapping check)."""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest

from edgecron import clock
from edgecron.services.fires import due_walk
from edgecron_testing import faults
from edgecron_testing.harness import ApiResponse, call_api, invoke, load_event, sqs_event, timeout_sec
from edgecron_testing.inprocess import due_walk_left_at
from edgecron_testing.receiver import Received, Receiver, Reply
from edgecron_testing.virtual_time import sqs_on_clock
from tests.integration.conftest import ADMIN_KEY, Pump, app_runs, new_app, queue

T0 = datetime(2026, 12, 4, 0, 0, 0, tzinfo=UTC)  # seed n starts n hours (and n seconds) later
FILTERS = {
    "invoices": ["invoice.*"],
    "all": ["*"],
    "users": ["user.created"],
    "direct-only": [],
    "failing": [],  # answers 500 to every request but a schedule's: its runs retry, then wait as dead letters
}
EVENT_NAMES = ["invoice.paid", "invoice.voided", "user.created", "order.shipped"]
TERMINAL = {"success", "failed", "dead_letter", "cancelled"}
FAULTED = ("api", "worker", "fanout", "scan", "compensation", "dlq", "fanout_dlq")

# Schedules --------------------------------------------------------------------------------------------
ACTIVE, PAUSED, NONE = "ACTIVE", "PAUSED", "NONE"  # NONE: not created yet
SETTLED = {"COMPLETED", "FAILED", "CANCELLED", "MISSED"}
RAN = {"COMPLETED", "FAILED"}
MARGIN_MS = 2_000  # a request's effect may lie this far either side of its first attempt and its answer
LOOKAHEAD_MS = 90_000  # more than the scan, a create or a resume dispatch ahead
DISPATCH_AHEAD_MS = 60_000  # a scan tick dispatches the fires of (at least) the next minute
STEP_SEC = 5  # the queues' consumers run every STEP_SEC seconds of the clock


def subscribes(pattern: str, name: str) -> bool:
    """The filter rule, written apart from the code under test: a name, `prefix.*`, or `*` for all."""
    return pattern in ("*", name) or (pattern.endswith(".*") and name.startswith(pattern[:-1]))


def seeds() -> list[int]:
    soak = int(os.environ.get("EDGECRON_SOAK_SEEDS", "0") or 0)
    return list(range(1, soak + 1)) if soak else [1, 2]


def ms_of(text: str) -> int:
    return clock.to_ms(datetime.fromisoformat(text))


@dataclass(frozen=True)
class Grid:
    """A schedule's fire times, written apart from the cron engine: the whole UTC seconds t with
    t % period == offset (a 6-field cron with seconds first, in UTC)."""

    period: int
    offset: int

    def on(self, fire_ms: int) -> bool:
        return fire_ms % 1000 == 0 and (fire_ms // 1000) % self.period == self.offset

    def times(self, after_ms: int, until_ms: int) -> list[int]:
        """Every fire time in (after_ms, until_ms]."""
        t = after_ms // 1000 + 1
        t += (self.offset - t) % self.period
        out = []
        while t * 1000 <= until_ms:
            out.append(t * 1000)
            t += self.period
        return out


@dataclass(frozen=True)
class Action:
    """A request of the client on a schedule: when its first attempt began and when its answer came
    (by the clock), and whether it was acknowledged (else it may or may not have taken effect)."""

    kind: str  # "create", "pause", "resume"
    start_ms: int
    end_ms: int
    acked: bool

    @property
    def leaves(self) -> str:
        return PAUSED if self.kind == "pause" else ACTIVE


@dataclass
class SimSchedule:
    id: str
    name: str
    grid: Grid
    endpoint_ids: list[str]  # empty: every Endpoint of the App
    missed_policy: str
    actions: list[Action] = field(default_factory=list)

    def states_at(self, fire_ms: int) -> set[str]:
        """What the schedule may have been at fire_ms, by the client's actions (in the order made)."""
        states = {NONE}
        for action in self.actions:
            if action.start_ms - MARGIN_MS > fire_ms:
                break
            if action.end_ms + MARGIN_MS < fire_ms and action.acked:
                states = {action.leaves}
            else:  # it may have taken effect before fire_ms, or after it, or (unanswered) not at all
                states = states | {action.leaves}
        return states

    def paused_after(self, fire_ms: int) -> bool:
        """Whether a pause (answered or not) may have taken effect after fire_ms."""
        return any(a.kind == "pause" and a.end_ms + MARGIN_MS >= fire_ms for a in self.actions)

    def believed(self) -> Action:
        return self.actions[-1]


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
    fires: Counter[str] = field(default_factory=Counter)  # by status
    schedule_actions: int = 0
    direct: int = 0
    schedules: int = 0
    unanswered: int = 0
    deploys: int = 0
    violations: list[str] = field(default_factory=list)

    def summary(self) -> tuple[Any, ...]:
        """What must repeat for the same seed: the workload's objects and the verdict. (The faults
        repeat too from a fresh process; within one, the second run meets warm caches, so makes
        fewer calls, e.g. no KMS decrypt of a signing key, and meets the faults of fewer calls:
        which fire times ran or were recorded MISSED, and which pauses were answered, may differ.)"""
        return (self.seed, self.direct, self.events, self.schedules, self.violations)


class Simulation:
    def __init__(self, seed: int, receiver: Receiver, fixed: clock.FixedClock) -> None:
        self.rng = random.Random(seed)
        self.undeleted = random.Random(seed * 31)  # apart from the workload's draws
        self.outcome = Outcome(seed)
        self.receiver = receiver
        self.pump = Pump()
        self.clock = fixed
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
        self.heard: list[tuple[int, Received]] = []  # (the clock's time, the request) as received
        for name in FILTERS:
            receiver.answer(f"/{name}", self.reply)
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
        self.schedules: list[SimSchedule] = []
        self.serial = 0
        self.scan_down_until: datetime | None = None  # a scan outage lasts until then
        self.deploy_at: datetime | None = None
        self.outages: list[tuple[datetime, int, int]] = []
        self.faults: faults.Faults | None = None
        self.clean_scans: list[int] = []  # when a scan tick met no fault and reported no failure
        self.faulted_messages: list[dict[str, Any]] = []  # bodies handled by an invocation that met one

    def reply(self, request: Received) -> Reply:
        """Every Endpoint answers 200, but the failing one fails every run but a schedule's (a
        broadcast reaches it too)."""
        self.heard.append((self.now_ms(), request))
        failing = request.path == "/failing" and "edgecron-schedule-id" not in request.headers
        return Reply(500) if failing else Reply(200)

    # --- the client ----------------------------------------------------------------------------
    def request(
        self, method: str, path: str, body: Any = None, idem: str | None = None, *, attempts: int = 8
    ) -> ApiResponse | None:
        """One request as a client makes it: a killed or failed request is retried with the same
        Idempotency-Key (after the dead request's lease, when the key is busy), up to `attempts`
        times in all."""
        headers = {"Idempotency-Key": idem} if idem else None
        for attempt in range(attempts):
            if attempt:
                self.outcome.client_retries += 1
            try:
                resp = call_api(method, path, key=self.key, body=body, headers=headers)
            except faults.InvocationKilled:
                self.tick(seconds=timeout_sec("api") + 1)  # the client waits out its timeout
                continue
            if resp.status >= 500 or resp.status == 429:
                continue
            if resp.status == 409 and resp.body["error"]["code"] == "IDEMPOTENCY_IN_PROGRESS":
                self.tick(seconds=timeout_sec("api") + 1)
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

    def create_schedule(self, kind: str) -> None:
        """One of the three schedules: every minute, every few seconds, or a broadcast."""
        by_name = {self.endpoints[ep]: ep for ep in self.endpoints}
        if kind == "minutely":
            second = self.rng.randrange(60)
            grid, cron = Grid(60, second), f"{second} * * * * *"
            endpoint_ids = [by_name["all"], by_name["invoices"]]
        elif kind == "seconds":
            period = self.rng.choice([5, 10])
            grid, cron = Grid(period, 0), f"*/{period} * * * * *"
            endpoint_ids = [by_name["users"]]
        else:
            first = self.rng.randrange(30)
            grid, cron = Grid(30, first), f"{first},{first + 30} * * * * *"
            endpoint_ids = []
        policy = self.rng.choice(["RUN_ONCE", "SKIP"])
        body = {
            "name": kind,
            "cron": cron,
            "endpoint_ids": endpoint_ids,
            "missed_policy": policy,
            "payload": {"schedule": kind},
        }
        start = self.now_ms()
        # a create dispatches its first fires before it answers: some 40 calls, each of which may
        # fail, so the client keeps retrying longer (its Idempotency-Key makes that safe)
        resp = self.request("POST", "/v1/schedules", body, idem=f"sch-{kind}", attempts=30)
        assert resp is not None and resp.status == 201, resp and resp.body
        schedule = SimSchedule(resp.body["id"], kind, grid, endpoint_ids, policy)
        schedule.actions.append(Action("create", start, self.now_ms(), True))
        self.schedules.append(schedule)

    def toggle(self, schedule: SimSchedule) -> None:
        """Pause a schedule the client believes ACTIVE, resume one it believes PAUSED; an action
        that got no answer is made again."""
        last = schedule.believed()
        kind = ("pause" if last.leaves == ACTIVE else "resume") if last.acked else last.kind
        self.schedule_action(schedule, kind)

    def schedule_action(self, schedule: SimSchedule, kind: str) -> None:
        start = self.now_ms()
        resp = self.request("POST", f"/v1/schedules/{schedule.id}/{kind}")
        acked = resp is not None and resp.status == 200
        if acked:
            assert resp is not None
            want = "PAUSED" if kind == "pause" else "ACTIVE"
            if resp.body["status"] != want:
                self.outcome.violations.append(
                    f"{schedule.name}: {kind} answered {resp.body['status']}, not {want}"
                )
        else:
            self.outcome.unanswered += 1
        schedule.actions.append(Action(kind, start, self.now_ms(), acked))
        self.outcome.schedule_actions += 1

    # --- the platform --------------------------------------------------------------------------
    def now_ms(self) -> int:
        return clock.to_ms(self.clock.now())

    def outage(self, seconds: int, deploy_before_end: int) -> None:
        """No scan tick for `seconds` from now; a deploy `deploy_before_end` seconds before its end."""
        now = self.clock.now()
        self.outages.append((now, seconds, deploy_before_end))
        self.scan_down_until = now + timedelta(seconds=seconds)
        self.deploy_at = self.scan_down_until - timedelta(seconds=deploy_before_end)

    def tick(self, *, seconds: float) -> None:
        """Time passes: the queues' consumers run every STEP_SEC seconds, the scan at every whole
        minute (unless it is down), the deploy when its time comes."""
        end = self.clock.now() + timedelta(seconds=seconds)
        while True:
            t = self.clock.now()
            step = datetime.fromtimestamp((int(t.timestamp()) // STEP_SEC + 1) * STEP_SEC, UTC)
            if step > end:
                break
            self.clock.set(step)
            self.at_step(step)
        self.clock.set(end)
        self.drain()

    def at_step(self, t: datetime) -> None:
        if self.deploy_at is not None and t >= self.deploy_at:
            self.deploy_at = None
            self.deploy()
        if self.scan_down_until is not None and t >= self.scan_down_until:
            self.scan_down_until = None
        if t.second == 0 and self.scan_down_until is None:
            self.scan()
            if self.rng.random() < 0.2:  # a duplicated tick
                self.scan()
        self.drain()

    def drain(self) -> None:
        for _ in range(100):
            moved = self.consume("FanoutQueue", "fanout")
            moved += self.consume("DeliveryQueue", "worker")
            moved += self.consume("DeliveryDLQ", "dlq")  # what SQS gave up on after 5 receives
            moved += self.consume("FanoutDLQ", "fanout_dlq")
            if not moved:
                return

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
        met = self.faults_met()
        try:
            result = invoke(function, sqs_event(messages, info.arn)) or {}
        except (Exception, faults.InvocationKilled):
            result = None
        if result is None or self.faults_met() != met:
            self.faulted_messages += [json.loads(m["Body"]) for m in messages]
        if result is None:
            return 1
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        for m in messages:
            if m["MessageId"] not in failed and self.undeleted.random() >= 0.05:  # else its delete was lost
                self.pump.sqs.delete_message(QueueUrl=info.url, ReceiptHandle=m["ReceiptHandle"])
        return 1

    def faults_met(self) -> int:
        return 0 if self.faults is None else len(self.faults.injected)

    def scan(self) -> None:
        met = self.faults_met()
        try:
            report = invoke("scan", load_event("scan.json")) or {}
        except faults.InvocationKilled:  # the next tick does its work
            return
        if self.faults_met() == met and not report.get("item_failures") and not report.get("stopped_early"):
            self.clean_scans.append(self.now_ms())

    def deploy(self) -> None:
        """A deploy: CloudFormation sends the custom resource's event to the compensation function;
        Lambda runs a failed or killed asynchronous invocation twice more, and a FAILED answer rolls
        the stack back, which sends it again."""
        self.outcome.deploys += 1
        name = self.rng.choice(["cfn-create.json", "cfn-update.json"])
        event = load_event(name) | {"ResponseURL": self.receiver.url("/cfn-response")}
        for _ in range(3):
            try:
                result = invoke("compensation", event)
            except (Exception, faults.InvocationKilled):
                continue
            if result.get("Status") == "SUCCESS":
                return

    def quiesce(self) -> None:
        """No more faults: every schedule is paused (the known point after which nothing fires),
        then every delay, visibility timeout and claim runs out, until the queues are empty and
        every run is terminal."""
        self.scan_down_until = None
        self.tick(seconds=90)  # a few scan ticks with no fault: what is due gets delivered
        for schedule in self.schedules:
            self.schedule_action(schedule, "pause")
        for _ in range(40):
            self.clock.advance(400)
            self.scan()
            self.drain()
            if all(run.status in TERMINAL for run in app_runs(self.app_id)) and not self.queued():
                break
        # a Fire a lost write left open is settled from its runs once it is that old
        self.clock.advance(due_walk.UNSETTLED_AFTER_MS / 1000)
        self.scan()
        self.drain()

    def queued(self) -> int:
        return sum(self.pump.depth(q) for q in ("FanoutQueue", "DeliveryQueue", "DeliveryDLQ", "FanoutDLQ"))

    # --- what a user observes ------------------------------------------------------------------
    def check(self) -> None:
        v = self.outcome.violations
        runs = app_runs(self.app_id)
        self.outcome.runs = len(runs)
        self.outcome.events = len(self.events)
        self.outcome.direct = len(self.direct)
        self.outcome.schedules = len(self.schedules)
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
        deliveries = [r for r in self.receiver.requests if r.path != "/cfn-response"]
        seen = Counter(request.headers.get("webhook-id", "") for request in deliveries)
        self.outcome.deliveries = sum(seen.values())
        for run_id, cancelled in self.cancelled_at.items():
            late = [r for r in deliveries if r.headers.get("webhook-id") == run_id and r.at > cancelled]
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
        self.check_fire_usage(usage["schedule"], runs)
        known = {s.id for s in self.schedules}
        strays = {run.source_id for run in runs if run.source == "schedule"} - known
        if strays:
            v.append(f"schedule runs of schedules never created: {sorted(strays)}")
        for schedule in self.schedules:
            self.check_schedule(schedule, runs)

    def check_fire_usage(self, billed: int, runs: list[Any]) -> None:
        """One trigger per dispatched fire (data-model.md, Usage): a Fire of listed Endpoints is billed
        by its first run, which every Fire written open gets (delivered, or written cancelled by a
        pause or a miss), so exactly the Fires with runs; a broadcast Fire by its first recorded
        page, which every Fire that settled from its runs had, and no Fire without runs."""
        with_runs = {(run.source_id, int(run.fire_at)) for run in runs if run.source == "schedule"}
        listed = low = high = 0
        for s in self.schedules:
            for fire in self.listed_fires(s.id):
                has_runs = (s.id, ms_of(fire["fire_time"])) in with_runs
                if s.endpoint_ids:
                    listed += has_runs
                else:
                    low += fire["status"] in ("COMPLETED", "FAILED")
                    high += has_runs
        if not listed + low <= billed <= listed + high:
            self.outcome.violations.append(
                f"usage counts {billed} schedule fires; {listed} listed Fires have runs, and between "
                f"{low} and {high} broadcast Fires recorded a page"
            )

    def check_schedule(self, s: SimSchedule, runs: list[Any]) -> None:
        v = self.outcome.violations
        fires: dict[int, dict[str, Any]] = {}
        for fire in self.listed_fires(s.id):
            t = ms_of(fire["fire_time"])
            self.outcome.fires[fire["status"]] += 1
            if t in fires:
                v.append(f"{s.name}: two Fires for {fire['fire_time']}")
            fires[t] = fire
            if fire["manual"] or not s.grid.on(t):
                v.append(f"{s.name}: a Fire at {fire['fire_time']}, off its grid {s.grid}")
            if fire["status"] not in SETTLED:
                v.append(f"{s.name}: the Fire at {fire['fire_time']} is {fire['status']}")
        bound = sorted(s.endpoint_ids or self.endpoints)
        own = [run for run in runs if run.source == "schedule" and run.source_id == s.id]
        per_fire: dict[int, list[str]] = defaultdict(list)
        unsent: dict[int, list[str]] = defaultdict(list)  # runs not cancelled before any request
        for run in own:
            per_fire[int(run.fire_at)].append(run.endpoint_id)
            if run.status != "cancelled" or int(run.total_attempts or 0):
                unsent[int(run.fire_at)].append(f"{run.run_id} {run.status}")
        for t, endpoint_ids in sorted(per_fire.items()):
            when = clock.iso_ms(t)
            if len(set(endpoint_ids)) != len(endpoint_ids):
                v.append(f"{s.name} {when}: several runs for one Endpoint {sorted(endpoint_ids)}")
            if not set(endpoint_ids) <= set(bound):
                v.append(f"{s.name} {when}: runs for {sorted(endpoint_ids)}, bound to {bound}")
            if t not in fires:
                v.append(f"{s.name} {when}: runs with no Fire")
        for t, fire in fires.items():
            if fire["status"] in RAN and sorted(per_fire.get(t, [])) != bound:
                v.append(
                    f"{s.name} {fire['fire_time']}: {fire['status']} with runs for "
                    f"{sorted(per_fire.get(t, []))}, bound to {bound}"
                )
            if fire["status"] == "MISSED" and t in unsent:
                # a run dispatched, its message lost, then cancelled by the catch-up is one never made
                v.append(f"{s.name} {fire['fire_time']}: MISSED with runs {unsent[t]}")
        delivered: dict[int, list[int]] = defaultdict(list)  # fire time -> when the receiver heard it
        for heard_ms, request in self.heard:
            if request.headers.get("edgecron-schedule-id") == s.id:
                delivered[ms_of(request.headers["edgecron-fire-time"])].append(heard_ms)
        first = s.actions[0].start_ms - MARGIN_MS
        last = s.actions[-1].end_ms + MARGIN_MS + LOOKAHEAD_MS  # the last pause spares fires dispatched ahead
        grid = s.grid.times(first - 1, last)
        for t in sorted(set(fires) | set(delivered)):
            if not first <= t <= last:
                v.append(f"{s.name} {clock.iso_ms(t)}: a Fire or a delivery outside the schedule's life")
        lost = []
        for t in grid:
            states = s.states_at(t)
            fire = fires.get(t)
            status = None if fire is None else fire["status"]
            when = clock.iso_ms(t)
            if t in delivered and (status is None or status == "MISSED"):
                v.append(f"{s.name} {when}: delivered, its Fire {status}")
            if states == {ACTIVE}:
                if fire is None:
                    lost.append(when)
                elif status == "CANCELLED" and not s.paused_after(t):
                    v.append(f"{s.name} {when}: CANCELLED with no pause after it")
            elif ACTIVE not in states:
                if t in delivered:
                    v.append(f"{s.name} {when}: delivered while {sorted(states)}")
                if fire is not None and status != "CANCELLED":
                    v.append(f"{s.name} {when}: a {status} Fire while {sorted(states)}")
        left_out = call_api("GET", f"/v1/schedules/{s.id}", key=self.key).body["missed_left_out"]
        if len(lost) > left_out:  # a catch-up records the newest 100 fire times it owes, counts the rest
            v.append(f"{s.name}: no Fire for {lost} while ACTIVE, {left_out} counted as left out")
        if s.missed_policy == "RUN_ONCE":
            self.check_run_once(s, fires, grid)
        for t, fire in fires.items():
            if fire["status"] == "MISSED" and self.dispatched_in_time(s, t, runs):
                v.append(
                    f"{s.name} {fire['fire_time']}: MISSED though a scan tick with no fault came before it"
                )

    def dispatched_in_time(self, s: SimSchedule, fire_ms: int, runs: list[Any]) -> bool:
        """Whether a scan tick that met no fault dispatched fire_ms ahead, the schedule certainly
        ACTIVE from that tick to fire_ms, and no invocation that met a fault handled that Fire's
        messages (a killed worker's message comes back after its visibility timeout: then the run
        is late, and the missed-fire policy may record it MISSED)."""
        ticks = [t for t in self.clean_scans if fire_ms - DISPATCH_AHEAD_MS <= t <= fire_ms - 1_000]
        ticks = [
            t
            for t in ticks
            if s.states_at(t) == {ACTIVE}
            and not any(a.start_ms - MARGIN_MS <= fire_ms and a.end_ms + MARGIN_MS >= t for a in s.actions)
        ]
        if not ticks:
            return False
        own = {
            run.run_id
            for run in runs
            if run.source == "schedule" and run.source_id == s.id and int(run.fire_at) == fire_ms
        }
        for body in self.faulted_messages:
            if body.get("run_id") in own:
                return False
            if body.get("schedule_id") == s.id and body.get("fire_at") in (None, fire_ms):
                return False
        return True

    def check_run_once(self, s: SimSchedule, fires: dict[int, dict[str, Any]], grid: list[int]) -> None:
        """RUN_ONCE: of the fire times a catch-up owes, the newest runs (late); only a pause records
        them all MISSED. So the fire time after a MISSED one is MISSED too, or has a Fire that is
        not, or a pause came before it."""
        for before, after in pairwise(grid):
            if fires.get(before, {}).get("status") != "MISSED":
                continue
            if fires.get(after) is not None or ACTIVE not in s.states_at(after):
                continue
            if any(
                a.kind == "pause" and a.start_ms - MARGIN_MS <= after and a.end_ms + MARGIN_MS >= before
                for a in s.actions
            ):
                continue
            v = self.outcome.violations
            v.append(f"{s.name} {clock.iso_ms(before)}: MISSED under RUN_ONCE, and no Fire after it")

    def listed_fires(self, schedule_id: str) -> list[dict[str, Any]]:
        return self.pages(f"/v1/schedules/{schedule_id}/fires", 50)

    def listed_events(self) -> list[str]:
        return [item["id"] for item in self.pages("/v1/events", 100)]

    def pages(self, path: str, limit: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = {"limit": str(limit), **({"cursor": cursor} if cursor else {})}
            resp = call_api("GET", path, key=self.key, query=query)
            assert resp.status == 200, resp.body
            items += resp.body["data"]
            cursor = resp.body.get("next_cursor")
            if not cursor:
                return items


def rates_for(rate: float) -> dict[str, float]:
    """A scan tick makes some 60 calls and a deploy's catch-up some 25, a request or a delivery
    under 10: at the same rate per call nearly every tick would fail, and the schedules would only
    ever be caught up after the fact. Their calls fail less often, so that about one tick in four
    and one deploy in five meets a fault."""
    return {"scan": rate / 8, "compensation": rate / 4}


_RUNS = itertools.count()  # the simulations this process has run


def simulate(seed: int, operations: int = 30, rate: float = 0.04) -> Outcome:
    """Each simulation of a process starts a month after the one before it (the tables and queues
    are shared, and time never runs backwards on a deployed stack), at the seed's own time of day."""
    receiver = Receiver()
    start = T0 + timedelta(days=30 * next(_RUNS), hours=seed % 500, seconds=seed % 60)
    fixed = clock.FixedClock(start)
    try:
        with sqs_on_clock(fixed):
            due_walk_left_at(clock.to_ms(start) - 60_000)
            return _simulate(seed, receiver, fixed, operations, rate)
    finally:
        receiver.close()


def _simulate(
    seed: int, receiver: Receiver, fixed: clock.FixedClock, operations: int, rate: float
) -> Outcome:
    sim = Simulation(seed, receiver, fixed)
    plan = sim.rng.sample(range(operations // 3), 3)
    creates = dict(zip(plan, ["minutely", "seconds", "broadcast"], strict=True))
    outage_at = sim.rng.randrange(operations // 3, 2 * operations // 3)
    with faults.Faults() as f:
        sim.faults = f
        f.random(random.Random(seed * 7919), rate, functions=FAULTED, rates=rates_for(rate))
        for i in range(operations):
            if i in creates:
                sim.create_schedule(creates[i])
            if i == outage_at:
                sim.outage(sim.rng.choice([180, 240, 300]), sim.rng.choice([10, 20, 30, 45]))
            roll = sim.rng.random()
            if roll < 0.45:
                sim.create_direct()
            elif roll < 0.55:
                sim.replay_dead_letter()
            elif roll < 0.72 and sim.schedules:
                sim.toggle(sim.rng.choice(sim.schedules))
            else:
                sim.publish()
            sim.tick(seconds=sim.rng.choice([0, 1, 5, 20, 70]))
        while sim.scan_down_until is not None or sim.deploy_at is not None:  # the outage ends
            sim.tick(seconds=10)
        sim.tick(seconds=60)  # the failing Endpoint's last retries fall due
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
        f"{outcome.events} events, fires {dict(outcome.fires)}, {outcome.deliveries} deliveries, "
        f"{outcome.client_retries} client retries, {outcome.replays} dead-letter replays, "
        f"{outcome.schedule_actions} pauses and resumes ({outcome.unanswered} unanswered), "
        f"{outcome.deploys} deploy"
    )
    assert sum(outcome.faults.values()) > 0, "no fault was injected: the simulation proves nothing"
    assert sum(outcome.fires.values()) > 0, "no schedule fired: the simulation proves nothing of them"
    assert outcome.violations == []


@pytest.mark.index_lag(0)
def test_the_same_seed_gives_the_same_outcome() -> None:
    first = simulate(1, operations=12)
    second = simulate(1, operations=12)
    assert first.summary() == second.summary()
