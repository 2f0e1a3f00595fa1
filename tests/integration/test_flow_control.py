"""Flow control per Endpoint in-process: the limits through the API (create, PATCH, GET, refusals),
and their enforcement by several worker invocations in threads against moto, with the injected
clock moving time and a real receiver on 127.0.0.1 counting what arrives: never more than
max_in_flight open at once nor more than max_per_sec in a second, every run delivered once, none
failed, an attempt counted only for a real send, the rate's order of due time kept, and a worker
that dies holding a lease blocks nothing past its claim."""

from __future__ import annotations

import itertools
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import flow_control as flow_data
from edgecron.data import runs as run_data
from edgecron.data.flow_control import FLOW_PARTITION, FlowControlModel
from edgecron.domain import run_states as st
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import RunStatus
from edgecron_testing.harness import call_api, delivery_message, invoke, load_function, sqs_event
from edgecron_testing.inprocess import UpdateItemCalls
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import new_app, queue

START = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)
STEP_SEC = 0.1


@pytest.fixture
def fixed() -> clock.FixedClock:
    at = clock.FixedClock(START)
    clock.set_clock(at)
    return at


@pytest.fixture
def workers() -> Iterator[ThreadPoolExecutor]:
    """Worker invocations side by side, as Lambda runs them for a busy queue."""
    load_function("worker")  # imported once, before the threads race to
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="worker")
    yield pool
    pool.shutdown(wait=True)


def endpoint(key: str, url: str, **limits: object) -> dict[str, Any]:
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url, **limits})
    assert resp.status == 201, resp.body
    return dict(resp.body)


def new_run(key: str, endpoint_id: str, deliver_at: datetime | None = None) -> str:
    body: dict[str, Any] = {"endpoint_id": endpoint_id}
    if deliver_at is not None:
        body["deliver_at"] = clock.iso(deliver_at)
    resp = call_api("POST", "/v1/task-runs", key=key, body=body)
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def worker_gets(pool: ThreadPoolExecutor, run_id: str, app_id: str) -> Future[Any]:
    """One worker invocation with the run's message, as SQS hands it over."""
    event = sqs_event([delivery_message(run_id, app_id)], queue("DeliveryQueue").arn)
    return pool.submit(invoke, "worker", event)


def tat(app_id: str, endpoint_id: str) -> int | None:
    try:
        row = FlowControlModel.get(FLOW_PARTITION + app_id, endpoint_id, consistent_read=True)
    except FlowControlModel.DoesNotExist:
        return None
    return None if row.tat is None else int(row.tat)


def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the workers did not get there"
        time.sleep(0.005)


class Queue:
    """SQS as the workers see it, on the injected clock: a waiting run's message is handed to a worker
    once the run is due (those flow control held back a little early, as SQS's whole-second delays
    do, so a worker waits out the rest of its slot), one message per run at a time."""

    def __init__(self, pool: ThreadPoolExecutor, app_id: str, endpoint_id: str, run_ids: list[str]) -> None:
        self.pool, self.app_id, self.endpoint_id, self.run_ids = pool, app_id, endpoint_id, run_ids
        self.busy: dict[str, Future[Any]] = {}

    def step(self, *, one_at_a_time: bool) -> bool:
        """Hand over what is due now; False once every run is final."""
        now_ms = clock.to_ms(clock.now())
        open_runs = 0
        for run_id in self.run_ids:
            run = run_data.get(self.app_id, run_id, consistent=True)
            assert run is not None
            if run.status in st.TERMINAL:
                continue
            open_runs += 1
            busy = self.busy.get(run_id)
            if busy is not None and not busy.done():
                continue
            if busy is not None:
                busy.result()  # a worker that raised fails the test
            if run.status not in st.WAITING:
                continue
            kept_slot = run.flow_slot is not None and run.flow_slot == run.deliver_at
            lead_ms = 300 if run.flow_held else 0
            if int(run.deliver_at) > now_ms + lead_ms:
                continue
            before = tat(self.app_id, self.endpoint_id)
            future = self.busy[run_id] = worker_gets(self.pool, run_id, self.app_id)
            if one_at_a_time and not kept_slot:  # the next message comes after this one took its slot
                self._until_slot_taken(future, before)
        return open_runs > 0

    def _until_slot_taken(self, future: Future[Any], before: int | None) -> None:
        until(lambda: future.done() or tat(self.app_id, self.endpoint_id) != before)

    def settle(self) -> None:
        for future in self.busy.values():
            future.result(timeout=30)


# --- the API --------------------------------------------------------------------------------------


def test_the_limits_are_unlimited_by_default_and_set_changed_and_cleared(receiver: Receiver) -> None:
    _, key = new_app("flow-api")
    plain = endpoint(key, receiver.url("/plain"))
    assert (plain["max_per_sec"], plain["max_in_flight"]) == (None, None)
    ep = endpoint(key, receiver.url("/limited"), max_per_sec=2.5, max_in_flight=3)
    assert (ep["max_per_sec"], ep["max_in_flight"]) == (2.5, 3)
    got = call_api("GET", f"/v1/endpoints/{ep['id']}", key=key).body
    assert (got["max_per_sec"], got["max_in_flight"]) == (2.5, 3)
    patched = call_api("PATCH", f"/v1/endpoints/{ep['id']}", key=key, body={"max_per_sec": 10})
    assert patched.status == 200, patched.body
    assert (patched.body["max_per_sec"], patched.body["max_in_flight"]) == (10, 3)
    cleared = call_api("PATCH", f"/v1/endpoints/{ep['id']}", key=key, body={"max_in_flight": None})
    assert (cleared.body["max_per_sec"], cleared.body["max_in_flight"]) == (10, None)
    cleared = call_api("PATCH", f"/v1/endpoints/{ep['id']}", key=key, body={"max_per_sec": None})
    got = call_api("GET", f"/v1/endpoints/{ep['id']}", key=key).body
    assert (got["max_per_sec"], got["max_in_flight"]) == (None, None)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_per_sec", 0),
        ("max_per_sec", -1),
        ("max_per_sec", 0.001),
        ("max_per_sec", 10_001),
        ("max_per_sec", "5"),
        ("max_per_sec", True),
        ("max_per_sec", [1]),
        ("max_in_flight", 0),
        ("max_in_flight", -3),
        ("max_in_flight", 1.5),
        ("max_in_flight", 2.0),
        ("max_in_flight", 101),
        ("max_in_flight", "2"),
        ("max_in_flight", False),
    ],
)
def test_a_bad_limit_is_a_400_naming_the_field_and_nothing_is_stored(
    receiver: Receiver, field: str, value: object
) -> None:
    _, key = new_app("flow-bad")
    created = call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url("/x"), field: value})
    assert created.status == 400, created.body
    assert created.body["error"]["code"] == "PARAM_INVALID"
    assert created.body["error"]["field"] == field
    assert call_api("GET", "/v1/endpoints", key=key).body["data"] == []
    ep = endpoint(key, receiver.url("/x"), max_per_sec=1, max_in_flight=1)
    patched = call_api("PATCH", f"/v1/endpoints/{ep['id']}", key=key, body={field: value})
    assert patched.status == 400, patched.body
    assert patched.body["error"]["field"] == field
    got = call_api("GET", f"/v1/endpoints/{ep['id']}", key=key).body
    assert (got["max_per_sec"], got["max_in_flight"], got["updated_at"]) == (1, 1, ep["updated_at"])


def test_an_endpoint_without_limits_writes_no_flow_control_state(receiver: Receiver) -> None:
    app_id, key = new_app("flow-none")
    ep = endpoint(key, receiver.url("/free"))
    run_id = new_run(key, ep["id"])
    invoke("worker", sqs_event([delivery_message(run_id, app_id)], queue("DeliveryQueue").arn))
    assert call_api("GET", f"/v1/task-runs/{run_id}", key=key).body["status"] == "success"
    assert tat(app_id, ep["id"]) is None
    assert flow_data.leases(app_id, ep["id"]) == {}


# --- enforcement ----------------------------------------------------------------------------------


def _delivered_once_each(key: str, run_ids: list[str], receiver: Receiver, path: str) -> None:
    ids = [r.headers["webhook-id"] for r in receiver.received(path)]
    assert sorted(ids) == sorted(run_ids)  # every run delivered, none twice
    for run_id in run_ids:
        run = call_api("GET", f"/v1/task-runs/{run_id}", key=key).body
        assert (run["status"], run["attempt_count"]) == ("success", 1), run
        attempts = call_api("GET", f"/v1/task-runs/{run_id}/attempts", key=key).body["data"]
        assert [a["status_code"] for a in attempts] == [200]  # a wait is not an attempt


def test_the_rate_holds_across_workers_in_order_of_due_time(
    fixed: clock.FixedClock, workers: ThreadPoolExecutor, receiver: Receiver
) -> None:
    app_id, key = new_app("flow-rate")
    ep = endpoint(key, receiver.url("/rate"), max_per_sec=2)
    # ten runs due 100 ms apart: five times what the Endpoint takes
    run_ids = [new_run(key, ep["id"], START + timedelta(milliseconds=100 * i)) for i in range(10)]
    queue_ = Queue(workers, app_id, ep["id"], run_ids)
    start_ms = clock.to_ms(START)
    for _ in range(200):
        if not queue_.step(one_at_a_time=True):
            break
        # one slot every 500 ms from the first due time: time moves on only once every run whose slot
        # has come arrived, so the order of arrival is the order of the slots, however busy the machine
        slots_come = sum(start_ms + 500 * i <= clock.to_ms(clock.now()) for i in range(len(run_ids)))
        until(lambda n=slots_come: len(receiver.received("/rate")) >= n)  # type: ignore[misc]
        fixed.advance(STEP_SEC)
    queue_.settle()
    _delivered_once_each(key, run_ids, receiver, "/rate")
    arrivals = receiver.received("/rate")
    assert [r.headers["webhook-id"] for r in arrivals] == run_ids  # in order of due time
    per_second = Counter(int(r.headers["webhook-timestamp"]) for r in arrivals)
    assert max(per_second.values()) == 2, per_second
    # ten at two a second from 09:00:00: the last one in the fifth second
    assert max(per_second) == int(START.timestamp()) + 4


def test_no_more_than_max_in_flight_are_open_at_once(
    fixed: clock.FixedClock, workers: ThreadPoolExecutor, receiver: Receiver
) -> None:
    app_id, key = new_app("flow-in-flight")
    # the receiver holds its answers until two are open, then takes its time: a third one would be seen
    receiver.script("/busy", Reply(together=2, delay_sec=0.3))
    ep = endpoint(key, receiver.url("/busy"), max_in_flight=2)
    run_ids = [new_run(key, ep["id"]) for _ in range(6)]
    queue_ = Queue(workers, app_id, ep["id"], run_ids)
    for _ in range(60):
        if not queue_.step(one_at_a_time=False):
            break
        queue_.settle()  # the round's workers finish (or hold their run back) before time moves
        fixed.advance(1.0)
    queue_.settle()
    assert receiver.max_in_flight("/busy") == 2
    _delivered_once_each(key, run_ids, receiver, "/busy")
    assert flow_data.leases(app_id, ep["id"]) == {}  # every lease given back


def test_a_worker_that_dies_holding_a_lease_blocks_nothing_past_its_claim(
    fixed: clock.FixedClock, receiver: Receiver
) -> None:
    app_id, key = new_app("flow-dead-worker")
    ep = endpoint(key, receiver.url("/one"), max_in_flight=1)
    dead_run = new_run(key, ep["id"])
    # a worker claims it and takes the Endpoint's one lease, then dies before sending
    claimed = run_data.claim(app_id, dead_run, clock.to_ms(clock.now()))
    assert claimed is not None
    assert flow_data.acquire_lease(
        app_id, ep["id"], dead_run, int(claimed.claim_expires_at), 1, clock.to_ms(clock.now())
    )
    other = new_run(key, ep["id"])
    invoke("worker", sqs_event([delivery_message(other, app_id)], queue("DeliveryQueue").arn))
    held = call_api("GET", f"/v1/task-runs/{other}", key=key).body
    assert (held["status"], held["attempt_count"]) == ("pending", 0)  # waits, not failed
    assert receiver.received("/one") == []
    fixed.advance(get_settings().claim_sec + 1)  # the dead worker's claim, and so its lease, expired
    invoke("worker", sqs_event([delivery_message(other, app_id)], queue("DeliveryQueue").arn))
    assert call_api("GET", f"/v1/task-runs/{other}", key=key).body["status"] == "success"
    # the dead worker's run is taken over once its claim expired, and delivered too
    invoke("worker", sqs_event([delivery_message(dead_run, app_id)], queue("DeliveryQueue").arn))
    assert call_api("GET", f"/v1/task-runs/{dead_run}", key=key).body["status"] == "success"
    assert sorted(r.headers["webhook-id"] for r in receiver.received("/one")) == sorted([dead_run, other])
    assert flow_data.leases(app_id, ep["id"]) == {}


def test_a_slot_beyond_the_queue_delay_waits_on_the_wake_index(
    fixed: clock.FixedClock, receiver: Receiver
) -> None:
    app_id, key = new_app("flow-slow")
    ep = endpoint(key, receiver.url("/slow"), max_per_sec=0.01)  # one every 100 s
    run_ids = [new_run(key, ep["id"]) for _ in range(11)]
    for run_id in run_ids:
        invoke("worker", sqs_event([delivery_message(run_id, app_id)], queue("DeliveryQueue").arn))
    assert len(receiver.received("/slow")) == 1
    last = run_data.get(app_id, run_ids[-1], consistent=True)
    assert last is not None
    # the eleventh slot is 1000 s away, past SQS's 900 s: the scan's wake entry brings it back then
    assert (last.status, int(last.deliver_at), int(last.wake_at)) == (
        RunStatus.PENDING,
        clock.to_ms(START) + 1_000_000,
        clock.to_ms(START) + 1_000_000,
    )
    assert last.total_attempts == 0 and last.attempt_count == 0
    fixed.advance(1_000)
    invoke("worker", sqs_event([delivery_message(run_ids[-1], app_id)], queue("DeliveryQueue").arn))
    assert call_api("GET", f"/v1/task-runs/{run_ids[-1]}", key=key).body["status"] == "success"


def test_slots_asked_for_at_once_are_distinct_and_an_interval_apart() -> None:
    app_id, ep_id, interval = "app_flowslots", f"ep_{uuid.uuid4().hex[:12]}", 250_000
    now_us = clock.to_ms(clock.now()) * 1000
    with ThreadPoolExecutor(max_workers=10) as pool:
        slots = sorted(pool.map(lambda _: flow_data.take_slot(app_id, ep_id, now_us, interval), range(10)))
    assert [b - a for a, b in itertools.pairwise(slots)] == [interval] * 9
    assert slots[0] >= now_us
    assert tat(app_id, ep_id) == slots[-1] + interval  # the shared item holds the next free slot


def test_leases_asked_for_at_once_never_exceed_the_limit_and_come_back() -> None:
    app_id, ep_id = "app_flowleases", f"ep_{uuid.uuid4().hex[:12]}"
    now_ms = clock.to_ms(clock.now())
    run_ids = [f"run_{i:02d}" for i in range(10)]
    with ThreadPoolExecutor(max_workers=10) as pool:
        held = list(
            pool.map(lambda r: flow_data.acquire_lease(app_id, ep_id, r, now_ms + 60_000, 4, now_ms), run_ids)
        )
    assert held.count(True) == 4
    assert set(flow_data.leases(app_id, ep_id)) == {r for r, h in zip(run_ids, held, strict=True) if h}
    with ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(lambda r: flow_data.release_lease(app_id, ep_id, r), run_ids))  # unheld ones too
    assert flow_data.leases(app_id, ep_id) == {}


def test_a_worker_batch_under_an_in_flight_limit_takes_and_gives_back_its_leases_together(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten deliveries of one batch to an Endpoint with room for all: their leases are taken in a few
    shared writes and given back in a few, not one write each way per delivery. The gathering waits
    in real time for the batch's threads to meet; on a loaded machine they can arrive further apart
    than the deployed 10 ms, so the window is widened here (what is counted is the grouping)."""
    monkeypatch.setattr(flow_data, "GATHER_GAP_SEC", 0.2)
    monkeypatch.setattr(flow_data, "GATHER_MAX_SEC", 2.0)
    app_id, key = new_app("flow-batch-writes")
    ep = endpoint(key, receiver.url("/roomy"), max_in_flight=100)
    arn = queue("DeliveryQueue").arn
    invoke(
        "worker", sqs_event([delivery_message(new_run(key, ep["id"]), app_id)], arn)
    )  # makes the lease map
    run_ids = [new_run(key, ep["id"]) for _ in range(10)]
    with UpdateItemCalls(FlowControlModel, FLOW_PARTITION + app_id) as writes:
        invoke("worker", sqs_event([delivery_message(r, app_id) for r in run_ids], arn))
    assert len(receiver.received("/roomy")) == 11
    assert flow_data.leases(app_id, ep["id"]) == {}
    assert writes.updates <= 4, writes.updates  # two writes each way at most


def hold_behind(app_id: str, endpoint_id: str, blocker_id: str, run_id: str) -> TaskRun | None:
    """`blocker_id` claimed and holding the Endpoint's one in-flight lease, the worker takes `run_id`,
    which flow control holds back; the run as stored then."""
    blocker = run_data.claim(app_id, blocker_id, clock.to_ms(clock.now()))
    assert blocker is not None
    assert flow_data.acquire_lease(
        app_id, endpoint_id, blocker_id, int(blocker.claim_expires_at or 0), 1, clock.to_ms(clock.now())
    )
    invoke("worker", sqs_event([delivery_message(run_id, app_id)], queue("DeliveryQueue").arn))
    return run_data.get(app_id, run_id, consistent=True)


def test_a_hold_after_the_check_of_recent_runs_passed_its_run_keeps_a_wake_entry(
    fixed: clock.FixedClock, receiver: Receiver
) -> None:
    """A run sent at its creation and held back long after it (a backlog came first) may be behind
    the check's mark: its held message could be lost, so it gets the entry the check would not give."""
    app_id, key = new_app("flow-late-hold")
    ep = endpoint(key, receiver.url("/late-hold"), max_in_flight=1)
    early = new_run(key, ep["id"])
    late = new_run(key, ep["id"])
    for run_id in (early, late):
        stored = run_data.get(app_id, run_id, consistent=True)
        assert stored is not None and not stored.has_wake_entry  # sent at creation: no entry
    # held soon after its creation: the check is still to read it, so no entry
    held = hold_behind(app_id, ep["id"], early, late)
    assert held is not None and held.status == RunStatus.PENDING and not held.has_wake_entry
    # first taken 200 s after its creation, and held again: past the check's reach, so an entry
    fixed.advance(200)
    held = hold_behind(app_id, ep["id"], early, late)
    assert held is not None and held.status == RunStatus.PENDING and held.has_wake_entry
