"""Schedule invariants under random interleavings (hypothesis, stateful): create, patch, pause,
resume, delete, scan ticks, worker deliveries, lost and duplicated messages, and a crash injected
at any AWS call of a step, over an injected clock and real HTTP to a receiver on 127.0.0.1. After
every step:

* at most one Fire per (schedule, fire time), one run per (Fire, endpoint), no run without its Fire;
* a MISSED Fire has no run that was attempted (its status follows from its runs);
* no delivery of a schedule after its pause (or delete) returned, until it is resumed;
* after a scan that ran without a crash, every past fire time of an active schedule is MISSED or
  has its runs (the 100-row MISSED cap aside: those are counted in missed_left_out);
* one Delivery Attempt per HTTP call (a worker that died mid-attempt leaves one recorded as lost).

Queues are real (moto SQS); a worker step takes one message whose SQS delay has elapsed on the
injected clock (moto times delays by the wall clock, so visibility is judged by the run's due time)."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import botocore.client
import pytest
from hypothesis import HealthCheck, Verbosity, settings
from hypothesis import strategies as hs
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import attempts as attempt_data
from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.models import FireModel
from edgecron.domain import cron
from edgecron.domain.vocabulary import FireStatus
from edgecron.services import delivery, scan
from edgecron_testing.harness import call_api
from edgecron_testing.inprocess import app_of_run
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import app_runs, drain_queues, new_app, queue, retire_runs, retire_schedules

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
EXAMPLES = int(os.environ.get("EDGECRON_PROPERTY_EXAMPLES", "20"))
CRONS = ["*/10 * * * * *", "5,35 * * * * *", "0 * * * *", "*/20 * * * * *"]
ZONES = ["UTC", "Asia/Kolkata", "America/New_York"]


class InjectedCrash(Exception):
    """A function dying at an AWS call (before it took effect, or after)."""


class Crasher:
    """Raises at the n-th AWS call of the armed step; the same hook every step goes through."""

    def __init__(self) -> None:
        self.countdown: int | None = None
        self.after = False
        self.fired = False
        self.crashes = 0
        self._original = botocore.client.BaseClient._make_api_call
        crasher = self

        def call(client: Any, operation: str, params: Any) -> Any:
            if crasher.countdown is not None:
                crasher.countdown -= 1
                if crasher.countdown == 0:
                    crasher.countdown = None
                    crasher.fired = True
                    crasher.crashes += 1
                    if crasher.after:
                        crasher._original(client, operation, params)
                    raise InjectedCrash(operation)
            return crasher._original(client, operation, params)

        self.hook = call

    def arm(self, at: int | None, after: bool) -> None:
        self.countdown, self.after, self.fired = at, after, False

    def disarm(self) -> bool:
        fired = self.fired
        self.countdown, self.fired = None, False
        return fired


@dataclass
class Model:
    """What the test knows of a schedule."""

    schedule_id: str
    since_ms: int  # its timing was last (re)set here: fire times after it are owed
    paused_returned: bool = False
    deleted: bool = False
    unsure: bool = False  # a crashed step may have changed it
    fire_times: set[int] = field(default_factory=set)


crash_at = hs.one_of(hs.none(), hs.integers(min_value=1, max_value=12))  # most steps make 5-30 calls


class ScheduleMachine(RuleBasedStateMachine):
    receiver: Receiver
    crasher: Crasher

    @initialize(
        cron_expr=hs.sampled_from([*CRONS, None]),
        bound=hs.sampled_from(["ok", "bad", "both"]),
        policy=hs.sampled_from(["RUN_ONCE", "SKIP"]),
    )
    def start(self, cron_expr: str | None, bound: str, policy: str) -> None:
        drain_queues()
        retire_schedules()
        retire_runs()
        self.clock = clock.FixedClock(T0)
        clock.set_clock(self.clock)
        self.app_id, self.key = new_app("properties")
        self.ok = self._endpoint("/ok")
        self.bad = self._endpoint("/bad")
        self.receiver.script("/bad", Reply(503))
        self.schedules: dict[str, Model] = {}
        self.seen_requests = self.first_request = len(self.receiver.requests)
        self.sqs = boto3.client("sqs", region_name="us-east-1")
        self.create(cron_expr, 30, "UTC", bound, policy, None, False)

    def _endpoint(self, path: str) -> str:
        body = {"url": self.receiver.url(path)}
        return str(call_api("POST", "/v1/endpoints", key=self.key, body=body).body["id"])

    def _now_ms(self) -> int:
        return clock.to_ms(self.clock.now())

    def _api(self, method: str, path: str, body: Any, crash: int | None, after: bool) -> Any:
        self.crasher.arm(crash, after)
        try:
            return call_api(method, path, key=self.key, body=body)
        finally:
            self.crasher.disarm()

    def _sync(self, model: Model, reset: bool) -> None:
        stored = schedule_data.get_timed(self.app_id, model.schedule_id, consistent=True)
        if stored is None:
            model.deleted = True
        if reset:
            model.since_ms = self._now_ms()

    # -- API ------------------------------------------------------------------------------------

    @precondition(lambda self: len(self.schedules) < 3)
    @rule(
        cron_expr=hs.sampled_from([*CRONS, None]),
        at_in=hs.integers(min_value=0, max_value=90),
        zone=hs.sampled_from(ZONES),
        bound=hs.sampled_from(["ok", "bad", "both"]),
        policy=hs.sampled_from(["RUN_ONCE", "SKIP"]),
        crash=crash_at,
        after=hs.booleans(),
    )
    def create(
        self,
        cron_expr: str | None,
        at_in: int,
        zone: str,
        bound: str,
        policy: str,
        crash: int | None,
        after: bool,
    ) -> None:
        eps = {"ok": [self.ok], "bad": [self.bad], "both": [self.ok, self.bad]}[bound]
        body: dict[str, Any] = {"endpoint_ids": eps, "missed_policy": policy, "timezone": zone}
        if cron_expr is None:
            body["at"] = (self.clock.now() + timedelta(seconds=at_in)).isoformat()
        else:
            body["cron"] = cron_expr
        resp = self._api("POST", "/v1/schedules", body, crash, after)
        if resp.status == 201:
            sid = resp.body["id"]
            self.schedules[sid] = Model(sid, self._now_ms())
        # a crashed create leaves either no schedule, or one whose look-ahead the scan dispatches

    @precondition(lambda self: bool(self.schedules))
    @rule(
        data=hs.data(),
        change=hs.sampled_from(["cron", "at", "timezone", "payload"]),
        crash=crash_at,
        after=hs.booleans(),
    )
    def patch(self, data: hs.DataObject, change: str, crash: int | None, after: bool) -> None:
        model = self.schedules[data.draw(hs.sampled_from(list(self.schedules)))]
        body: dict[str, Any] = {
            "cron": {"cron": data.draw(hs.sampled_from(CRONS))},
            "at": {"at": (self.clock.now() + timedelta(seconds=data.draw(hs.integers(0, 90)))).isoformat()},
            "timezone": {"timezone": data.draw(hs.sampled_from(ZONES))},
            "payload": {"payload": {"n": data.draw(hs.integers(0, 9))}},
        }[change]
        resp = self._api("PATCH", f"/v1/schedules/{model.schedule_id}", body, crash, after)
        if resp.status == 200 or resp.status >= 500:
            self._sync(model, reset=change != "payload" or resp.status >= 500)

    @precondition(lambda self: bool(self.schedules))
    @rule(data=hs.data(), crash=crash_at, after=hs.booleans())
    def pause(self, data: hs.DataObject, crash: int | None, after: bool) -> None:
        model = self.schedules[data.draw(hs.sampled_from(list(self.schedules)))]
        resp = self._api("POST", f"/v1/schedules/{model.schedule_id}/pause", None, crash, after)
        if resp.status == 200:
            model.paused_returned = True

    @precondition(lambda self: bool(self.schedules))
    @rule(data=hs.data(), crash=crash_at, after=hs.booleans())
    def resume(self, data: hs.DataObject, crash: int | None, after: bool) -> None:
        model = self.schedules[data.draw(hs.sampled_from(list(self.schedules)))]
        resp = self._api("POST", f"/v1/schedules/{model.schedule_id}/resume", None, crash, after)
        if resp.status == 200:
            model.paused_returned = False
            self._sync(model, reset=True)
        elif resp.status >= 500:
            stored = schedule_data.get_timed(self.app_id, model.schedule_id, consistent=True)
            if stored is not None and stored.status == "ACTIVE":
                model.paused_returned = False  # it did resume before the crash
                self._sync(model, reset=True)

    @precondition(lambda self: bool(self.schedules))
    @rule(data=hs.data(), crash=crash_at, after=hs.booleans())
    def delete(self, data: hs.DataObject, crash: int | None, after: bool) -> None:
        model = self.schedules[data.draw(hs.sampled_from(list(self.schedules)))]
        resp = self._api("DELETE", f"/v1/schedules/{model.schedule_id}", None, crash, after)
        if resp.status in (204, 404):
            model.paused_returned = True
            model.deleted = True

    # -- time, scan, worker, queue -------------------------------------------------------------------

    @rule(seconds=hs.integers(min_value=1, max_value=120), tick=hs.booleans())
    def advance(self, seconds: int, tick: bool) -> None:
        """Time passes; with `tick`, the scan runs at the new time (as EventBridge makes it)."""
        self.clock.advance(seconds)
        if tick:
            self.scan_tick(None, False)

    @rule(crash=crash_at, after=hs.booleans())
    def scan_tick(self, crash: int | None, after: bool) -> None:
        self.crasher.arm(crash, after)
        try:
            scan.run_scan(self.clock.now(), remaining_ms=lambda: 10**9)
        except InjectedCrash:
            pass
        finally:
            crashed = self.crasher.disarm()
        if not crashed:
            self.check_owed_fires()

    def _messages(self) -> list[tuple[str, Any, str]]:
        """(queue, moto message, run id) of every queued message whose delay has elapsed."""
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.sqs.models import sqs_backends

        backend = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
        now_ms = self._now_ms()
        found = []
        for logical in ("DeliveryQueue",):
            q = backend.queues[queue(logical).name]
            for m in list(q._messages):
                run_id = json.loads(m.body)["run_id"]
                run = run_data.get(app_of_run(run_id), run_id, consistent=True)
                if (
                    run is None
                    or run.status not in ("pending", "retry_scheduled")
                    or run.deliver_at <= now_ms
                ):
                    found.append((logical, m, run_id))
        return found

    def _take(self, index: int) -> tuple[str, Any, str] | None:
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.sqs.models import sqs_backends

        messages = self._messages()
        if not messages:
            return None
        logical, m, run_id = messages[index % len(messages)]
        backend = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
        backend.queues[queue(logical).name]._messages.remove(m)
        return logical, m, run_id

    def _take_all(self) -> list[tuple[str, Any, str]]:
        """Every message whose delay has elapsed, taken off its queue at once (a drain of workers)."""
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.sqs.models import sqs_backends

        backend = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
        messages = self._messages()
        for logical, m, _ in messages:
            backend.queues[queue(logical).name]._messages.remove(m)
        return messages

    @rule(
        index=hs.integers(min_value=0, max_value=50),
        drain=hs.booleans(),
        crash=crash_at,
        after=hs.booleans(),
    )
    def worker(self, index: int, drain: bool, crash: int | None, after: bool) -> None:
        """A worker takes one message whose delay has elapsed (and may crash at an AWS call); with
        `drain`, workers then take all the others too, without crashing."""
        taken = self._take(index)
        if taken is not None:
            logical, m, run_id = taken
            self.crasher.arm(crash, after)
            try:
                delivery.deliver(run_id, app_of_run(run_id))
            except InjectedCrash:  # SQS delivers the message again after its visibility timeout
                self.sqs.send_message(QueueUrl=queue(logical).url, MessageBody=m.body)
            finally:
                self.crasher.disarm()
        while drain and (due := self._take_all()):
            for _, _, run_id in due:
                delivery.deliver(run_id, app_of_run(run_id))
        self.check_deliveries()

    @rule(index=hs.integers(min_value=0, max_value=50), fault=hs.sampled_from(["lose", "duplicate"]))
    def queue_fault(self, index: int, fault: str) -> None:
        """SQS loses a message, or delivers one twice."""
        if fault == "lose":
            self._take(index)
            return
        messages = self._messages()
        if messages:
            logical, m, _ = messages[index % len(messages)]
            self.sqs.send_message(QueueUrl=queue(logical).url, MessageBody=m.body)

    def teardown(self) -> None:
        """Each example ends as a healthy stack goes on: a clean scan, time past the fires it sent
        ahead, and workers taking every message; the invariants hold at the end too. So every example
        delivers what its schedules still owe, whatever steps it drew."""
        if not hasattr(self, "app_id"):
            return
        self.scan_tick(None, False)
        self.clock.advance(get_settings().lookahead_sec + 1)
        self.worker(0, True, None, False)
        self.one_fire_per_time_and_no_run_without_its_fire()
        self.one_attempt_per_http_call()

    # -- invariants -------------------------------------------------------------------------------------

    def check_deliveries(self) -> None:
        """No delivery of a schedule whose pause or delete returned (and that was not resumed)."""
        new = self.receiver.requests[self.seen_requests :]
        self.seen_requests = len(self.receiver.requests)
        for request in new:
            run_id = request.headers.get("webhook-id", "")
            run = run_data.get(app_of_run(run_id), run_id, consistent=True)
            assert run is not None and run.source_id is not None
            model = self.schedules.get(run.source_id)
            assert model is None or not model.paused_returned, (
                f"schedule {run.source_id} delivered fire {run.fire_at} after its pause or delete returned"
            )

    def check_owed_fires(self) -> None:
        """After a clean scan: every past fire time of an active schedule is MISSED or has its runs."""
        now_ms = self._now_ms()
        for model in self.schedules.values():
            stored = schedule_data.get_timed(self.app_id, model.schedule_id, consistent=True)
            if stored is None or stored.status != "ACTIVE":
                continue
            fires = {int(f.fire_at): f for f in FireModel.query(model.schedule_id, consistent_read=True)}
            if stored.cron is None:
                if stored.at is None:
                    continue
                at = int(stored.at)  # one whose time passed while it was paused does not run
                owed = [at] if model.since_ms <= at <= now_ms else []
            else:
                spec = cron.parse_cron(stored.cron, stored.timezone)
                start, end = clock.from_ms(model.since_ms), clock.from_ms(now_ms + 1)
                owed = [clock.to_ms(t) for t in cron.fires_between(spec, start, end, 100_000)]
            missing = [t for t in owed if t not in fires]
            assert len(missing) <= int(stored.missed_left_out or 0), (
                f"schedule {model.schedule_id}: fire times {missing[:5]} have no Fire"
            )
            for t in owed:
                fire = fires.get(t)
                if fire is not None and fire.status != FireStatus.MISSED:
                    run_ids = fire_data.run_ids_of(fire)
                    assert run_ids and len(run_data.get_many(self.app_id, run_ids)) == len(run_ids), (
                        f"schedule {model.schedule_id}: the Fire at {t} has no runs"
                    )

    @invariant()
    def one_fire_per_time_and_no_run_without_its_fire(self) -> None:
        if not hasattr(self, "app_id"):
            return
        fires: dict[tuple[str, int], FireModel] = {}
        for model in self.schedules.values():
            for fire in FireModel.query(model.schedule_id, consistent_read=True):
                key = (model.schedule_id, int(fire.fire_at))
                assert key not in fires, f"two Fires for {key}"
                fires[key] = fire
        per_fire: dict[tuple[str, int], list[str]] = defaultdict(list)
        for run in app_runs(self.app_id):
            if run.source != "schedule" or run.source_id not in self.schedules:
                continue
            key = (run.source_id, int(run.fire_at or 0))
            per_fire[key].append(run.endpoint_id)
            assert key in fires, f"run {run.run_id} has no Fire"
            assert run.run_id in fire_data.run_ids_of(fires[key]), f"run {run.run_id} is not its Fire's"
        for key, endpoints in per_fire.items():
            assert len(endpoints) == len(set(endpoints)), f"two runs for one endpoint of Fire {key}"
        missed = [f for f in fires.values() if f.status == FireStatus.MISSED]
        ids = [i for f in missed for i in fire_data.run_ids_of(f)]
        attempted = {r.run_id for r in run_data.get_many(self.app_id, ids) if int(r.total_attempts) > 0}
        for fire in missed:  # a Fire's status follows from what happened to its runs
            started = [i for i in fire_data.run_ids_of(fire) if i in attempted]
            assert not started, (
                f"Fire {fire.schedule_id}@{fire.fire_at} is MISSED but {started} were attempted"
            )

    @invariant()
    def one_attempt_per_http_call(self) -> None:
        if not hasattr(self, "app_id"):
            return
        calls: dict[str, int] = defaultdict(int)
        for request in self.receiver.requests[self.first_request :]:
            calls[request.headers.get("webhook-id", "")] += 1
        for run in run_data.get_many(self.app_id, sorted(calls)):
            n = calls[run.run_id]
            attempts = attempt_data.all_of(run.app_id, run.run_id)
            recorded = [a for a in attempts if a.error_kind != "worker_lost"]
            in_flight = 1 if run.status == "running" else 0
            assert len(recorded) <= n <= len(attempts) + in_flight, (
                f"run {run.run_id}: {n} HTTP calls, {len(recorded)} attempts recorded, "
                f"{len(attempts) - len(recorded)} recorded as lost"
            )


@pytest.fixture
def receiver() -> Any:
    r = Receiver()
    yield r
    r.close()


@pytest.mark.timeout(1200)  # a failure is shrunk to its shortest sequence of steps, which takes a while
def test_schedule_invariants_hold_under_random_interleavings(receiver: Receiver) -> None:
    crasher = Crasher()
    botocore.client.BaseClient._make_api_call = crasher.hook  # type: ignore[method-assign]
    ScheduleMachine.receiver = receiver
    ScheduleMachine.crasher = crasher
    try:
        run_state_machine_as_test(
            ScheduleMachine,
            settings=settings(
                max_examples=EXAMPLES,
                stateful_step_count=30,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
                verbosity=Verbosity.verbose
                if os.environ.get("EDGECRON_PROPERTY_VERBOSE")
                else Verbosity.normal,
            ),
        )
    finally:
        botocore.client.BaseClient._make_api_call = crasher._original  # type: ignore[method-assign]
        clock.set_clock(clock.SystemClock())
    # the run exercised what it claims to: crashes were injected and schedules delivered
    assert crasher.crashes > 0 and len(receiver.requests) > 0
