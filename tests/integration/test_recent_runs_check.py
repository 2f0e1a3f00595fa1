"""Runs whose message is sent when they are created (direct runs due within the look-ahead, Event
runs) have no `wake` entry: the scan's check of recent runs finds one whose message was lost, and
reads only the runs created since its last tick."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock, ids
from edgecron.data import run_checks
from edgecron.data import runs as run_data
from edgecron.data.keys import RUN_PARTITIONS
from edgecron.data.models import RUNS_CHECKED_MONTH, RunsCheckedModel, TaskRunModel
from edgecron.data.runs import per_partition_page
from edgecron.domain.vocabulary import RunStatus
from edgecron.services.scan import CHECK_BATCH
from edgecron_testing.harness import call_api, invoke
from edgecron_testing.inprocess import app_of_run
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump, drain_queues, new_app

LAG_SEC = 230  # REDISPATCH_AFTER_SEC 300 - LOOKAHEAD_SEC 70: when a run sent at creation is checked


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _endpoint(key: str, url: str, **extra: object) -> str:
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url, **extra})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def _create_run(key: str, endpoint_id: str) -> str:
    resp = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def _status(key: str, run_id: str) -> str:
    return str(call_api("GET", f"/v1/task-runs/{run_id}", key=key).body["status"])


def _scan() -> dict[str, Any]:
    report = invoke("scan", {"detail": {}})
    assert isinstance(report, dict)
    return report


def test_a_lost_message_of_a_direct_run_sent_at_creation_is_found_by_the_next_scan(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    run_id = _create_run(app_key, _endpoint(app_key, receiver.url("/lost-direct")))
    stored = run_data.get(app_of_run(run_id), run_id, consistent=True)
    assert stored is not None and not stored.has_wake_entry and stored.wake_at is None  # no entry written
    drain_queues()  # the message is lost
    assert _scan()["runs_enqueued"] == 0
    fixed.advance(LAG_SEC - 1)
    report = _scan()  # too young to be checked: its message may still be on its way
    assert report["runs_enqueued"] == 0 and report["runs_checked"] == 0, report
    assert pump.deliveries() == 0
    fixed.advance(1)
    report = _scan()
    assert report["runs_checked"] == 1 and report["runs_enqueued"] == 1, report
    assert pump.deliveries() == 1
    assert _status(app_key, run_id) == "success"
    assert len(receiver.received("/lost-direct")) == 1
    done = run_data.get(app_of_run(run_id), run_id, consistent=True)
    assert done is not None and not done.has_wake_entry  # terminal: out of the index again
    report = _scan()  # checked once: a later tick neither reads nor sends it again
    assert report["runs_checked"] == 0 and report["runs_enqueued"] == 0, report


def test_a_lost_message_of_an_event_run_is_found_by_the_next_scan(receiver: Receiver, pump: Pump) -> None:
    _, key = new_app("events")
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    for i in range(3):
        _endpoint(key, receiver.url(f"/lost-event-{i}"), filter_events=["order.*"])
    resp = call_api("POST", "/v1/events", key=key, body={"name": "order.paid", "payload": {"n": 1}})
    assert resp.status == 202, resp.body
    while pump.once("FanoutQueue", "fanout", batch=1):
        pass
    runs = [r for r in TaskRunModel.scan(TaskRunModel.source_id == resp.body["id"])]
    assert len(runs) == 3 and all(r.wake_shard is None for r in runs)  # sent at once, no wake entries
    drain_queues()  # every delivery message is lost
    fixed.advance(LAG_SEC - 1)
    assert _scan()["runs_enqueued"] == 0
    fixed.advance(1)
    report = _scan()
    assert report["runs_checked"] == 3 and report["runs_enqueued"] == 3, report
    assert pump.deliveries() == 3
    for i in range(3):
        assert len(receiver.received(f"/lost-event-{i}")) == 1
    assert {_status(key, r.run_id) for r in runs} == {"success"}


def _finished_runs(app_id: str, endpoint_id: str, created_ms: int, n: int) -> None:
    """n delivered runs created at `created_ms` (+ 1 ms each), written directly, after covering
    their times as a creator of runs sent at creation does (data/run_checks.py)."""
    run_checks.cover(app_id, created_ms + n)
    for i in range(n):
        run = run_data.new_run(
            run_id=ids.keyed_id("run", created_ms + i, str(i)),
            app_id=app_id,
            endpoint_id=endpoint_id,
            source="direct",
            source_id=None,
            payload=None,
            deliver_at_ms=created_ms + i,
            wake_at_ms=None,
            now_ms=created_ms + i,
        )
        assert run_data.put_new(replace(run, status=RunStatus.SUCCESS))


class _RunReads:
    """Counts the Task Run items the check reads: items returned by queries of the Task Runs table
    (keyed by App) and keys asked for by batch gets of it."""

    def __init__(self) -> None:
        self.index_keys = 0
        self.batch_keys = 0
        self.partitions: list[str] = []  # the partition key of each query of the table
        self._params: dict[str, Any] = {}
        self._events = TaskRunModel._get_connection().connection.client.meta.events

    def __enter__(self) -> _RunReads:
        self._events.register("before-call.dynamodb", self._asked)
        self._events.register("after-call.dynamodb", self._answered)
        return self

    def __exit__(self, *_: object) -> None:
        self._events.unregister("before-call.dynamodb", self._asked)
        self._events.unregister("after-call.dynamodb", self._answered)

    def _asked(self, model: Any, params: dict[str, Any], **_: object) -> None:
        request = json.loads(params.get("body") or b"{}")  # the request as sent
        self._params = request  # the scan makes one call at a time
        table = TaskRunModel.Meta.table_name
        if model.name == "BatchGetItem" and table in request.get("RequestItems", {}):
            self.batch_keys += len(request["RequestItems"][table]["Keys"])

    def _answered(self, model: Any, parsed: dict[str, Any], **_: object) -> None:
        table = TaskRunModel.Meta.table_name
        if (
            model.name == "Query"
            and self._params.get("TableName") == table
            and not self._params.get("IndexName")
        ):
            self.index_keys += int(parsed.get("Count", 0))
            values = self._params.get("ExpressionAttributeValues", {})
            self.partitions.extend(v["S"] for v in values.values() if "#" in v.get("S", ""))

    def queried(self, app_id: str) -> int:
        """How many queries read the App's partitions."""
        return sum(1 for part in self.partitions if part.startswith(app_id + "#"))


def test_the_check_reads_only_the_runs_created_since_the_last_tick(receiver: Receiver) -> None:
    app_id, key = new_app("bounds")
    endpoint_id = _endpoint(key, receiver.url("/bounds"))
    created = clock.to_ms(datetime.now(UTC))  # about when the App was created
    fixed = clock.FixedClock(datetime.now(UTC) + timedelta(hours=1))
    clock.set_clock(fixed)
    _finished_runs(app_id, endpoint_id, created + 1_000, 150)
    fixed.advance(10)  # index entries show a moment after their write
    report = _scan()  # an App's first check reads from its creation (at most FIRST_CHECK_SEC back)
    assert report["runs_checked"] == 150, report
    for older in (0, 850):  # the same reads whatever the App's history before its mark
        _finished_runs(app_id, endpoint_id, created + 2_000, older)
        fixed.advance(50)
        until = clock.to_ms(fixed.now()) + 10_000 - LAG_SEC * 1000
        _finished_runs(app_id, endpoint_id, until - 30_000, 120)  # created since the last tick
        fixed.advance(10)
        with _RunReads() as reads:
            report = _scan()
        assert report["runs_checked"] == 120, report
        # the runs of the window, each once, plus what a batch read past its end in each of the
        # App's partitions (read again by the next batch), plus the last key handled; no batch get
        read_past_batch = RUN_PARTITIONS * per_partition_page(CHECK_BATCH + 1)
        assert 120 <= reads.index_keys <= 122 + read_past_batch and reads.batch_keys == 0, (
            older,
            vars(reads),
        )
    with _RunReads() as reads:
        report = _scan()  # nothing new: the App costs a query per partition that finds nothing
    assert report["runs_checked"] == 0 and reads.index_keys <= 1 and reads.batch_keys == 0


def test_a_failing_check_of_one_app_leaves_the_others_and_the_wake_walk_to_run(
    receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_app("broken")
    healthy, key = new_app("healthy")
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    lost = _create_run(key, _endpoint(key, receiver.url("/healthy")))
    body = {"endpoint_id": _endpoint(key, receiver.url("/later")), "delay_sec": 120}
    later = call_api("POST", "/v1/task-runs", key=key, body=body)  # beyond the look-ahead: a wake entry
    assert later.status == 201, later.body
    drain_queues()
    real = run_data.created_between

    def failing(app_id: str, *args: Any) -> list[Any]:
        if app_id != healthy:  # every other App's index read fails
            raise RuntimeError("index read failed")
        return real(app_id, *args)

    monkeypatch.setattr(run_data, "created_between", failing)
    fixed.advance(LAG_SEC)
    report = _scan()
    assert report["item_failures"] >= 1, report
    assert report["runs_enqueued"] == 2, report  # the lost run (check) and the delayed one (wake walk)
    assert pump.deliveries() == 2
    assert _status(key, lost) == "success" and _status(key, str(later.body["id"])) == "success"


def test_a_rebuild_resends_runs_sent_at_creation_at_once_and_leaves_the_marks(
    receiver: Receiver, pump: Pump
) -> None:
    """After a snapshot restore or a purge every message is known lost: a rebuild does not wait for
    the check's lag."""
    app_id, key = new_app("rebuild")
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    run_id = _create_run(key, _endpoint(key, receiver.url("/rebuild")))
    drain_queues()
    fixed.advance(5)  # index entries show a moment after their write
    report = invoke("scan", {"detail": {"rebuild": True}})
    assert report["runs_enqueued"] == 1, report
    assert run_checks.marks([app_id])[app_id].checked_key is None  # a rebuild moves no mark
    assert pump.deliveries() == 1
    assert _status(key, run_id) == "success"


def test_an_app_whose_runs_cannot_reach_past_its_mark_costs_no_query_until_it_creates_one(
    receiver: Receiver, pump: Pump
) -> None:
    app_id, key = new_app("idle")
    endpoint_id = _endpoint(key, receiver.url("/idle"))
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    for _ in range(2):  # a new App, then the same App once its first check set a mark
        fixed.advance(LAG_SEC + 1)
        with _RunReads() as reads:
            _scan()
        assert reads.queried(app_id) == 0, vars(reads)
    run_id = _create_run(key, endpoint_id)  # covers its time before it is put
    drain_queues()  # and its message is lost
    fixed.advance(LAG_SEC)
    with _RunReads() as reads:
        report = _scan()
    assert reads.queried(app_id) == RUN_PARTITIONS and report["runs_enqueued"] == 1, report
    assert pump.deliveries() == 1 and _status(key, run_id) == "success"
    fixed.advance(LAG_SEC)  # the cover still reaches past the mark: the App is read, finds nothing new
    with _RunReads() as reads:
        assert _scan()["runs_checked"] == 0
    assert reads.queried(app_id) == RUN_PARTITIONS
    fixed.advance(run_checks.COVER_MS / 1000)  # the window is past the cover: read once more,
    with _RunReads() as reads:
        _scan()
    assert reads.queried(app_id) == RUN_PARTITIONS
    fixed.advance(LAG_SEC)  # and the mark moved past the cover: nothing can be after it
    with _RunReads() as reads:
        _scan()
    assert reads.queried(app_id) == 0
    assert run_checks.marks([app_id])[app_id].checked_key == run_data.time_floor(
        run_checks.marks([app_id])[app_id].created_until + 1  # type: ignore[operator]
    )


def test_an_app_without_a_cover_is_read_every_tick() -> None:
    """An App of an earlier release, which never wrote a cover: nothing says where its runs end."""
    app_id, _ = new_app("uncovered")
    RunsCheckedModel(app_id=app_id, month=RUNS_CHECKED_MONTH).update(
        actions=[RunsCheckedModel.created_until.remove()]
    )
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    for _ in range(2):
        fixed.advance(LAG_SEC + 1)
        with _RunReads() as reads:
            _scan()
        assert reads.queried(app_id) == RUN_PARTITIONS


def test_a_container_writes_an_apps_cover_once_in_a_while_and_never_moves_it_back() -> None:
    app_id, _ = new_app("cover")
    now_ms = clock.to_ms(datetime.now(UTC))

    def stored() -> int:
        return int(RunsCheckedModel.get(app_id, RUNS_CHECKED_MONTH, consistent_read=True).created_until)

    run_checks.cover(app_id, now_ms)
    assert stored() == now_ms + run_checks.COVER_MS
    run_checks.cover(app_id, now_ms + run_checks.COVER_MS - run_checks.RENEW_MS)  # still covered
    assert stored() == now_ms + run_checks.COVER_MS
    later = now_ms + run_checks.COVER_MS - run_checks.RENEW_MS + 1
    run_checks.cover(app_id, later)  # less than RENEW_MS left: renewed
    assert stored() == later + run_checks.COVER_MS
    run_checks._COVERED.clear()  # another container, whose clock is behind
    run_checks.cover(app_id, now_ms)
    assert stored() == later + run_checks.COVER_MS  # a cover never shrinks


def _fire_now(key: str, endpoint_id: str, **extra: object) -> str:
    """A one-time schedule due at the current (fixed) instant: its run is sent when it is dispatched."""
    body = {"at": clock.now().isoformat(), "endpoint_ids": [endpoint_id], **extra}
    resp = call_api("POST", "/v1/schedules", key=key, body=body)
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def _schedule_runs(schedule_id: str) -> list[TaskRunModel]:
    return list(TaskRunModel.scan(TaskRunModel.source_id == schedule_id))


def test_a_lost_message_of_a_schedule_run_is_found_by_the_check_and_follows_the_missed_policy(
    receiver: Receiver, pump: Pump
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC).replace(microsecond=0))
    clock.set_clock(fixed)
    _, key = new_app("schedule-check")
    kept = _fire_now(key, _endpoint(key, receiver.url("/lost-fire-run-once")), missed_policy="RUN_ONCE")
    skipped = _fire_now(key, _endpoint(key, receiver.url("/lost-fire-skip")), missed_policy="SKIP")
    runs = _schedule_runs(kept) + _schedule_runs(skipped)
    assert len(runs) == 2 and all(r.wake_shard is None and r.wake_at is None for r in runs)  # no entries
    drain_queues()  # both messages are lost
    fixed.advance(LAG_SEC - 1)
    assert _scan()["runs_checked"] == 0  # its message may still be on its way
    fixed.advance(1)
    report = _scan()
    assert report["runs_checked"] == 2, report
    assert pump.deliveries() == 1
    assert len(receiver.received("/lost-fire-run-once")) == 1  # RUN_ONCE: delivered late, once
    assert receiver.received("/lost-fire-skip") == []  # SKIP: the fire is recorded missed
    assert {r.status for r in _schedule_runs(skipped)} == {"cancelled"}
    fires = call_api("GET", f"/v1/schedules/{skipped}/fires", key=key).body["data"]
    assert [f["status"] for f in fires] == ["MISSED"]


def test_a_jittered_fire_keeps_the_wake_entries_of_its_runs(receiver: Receiver) -> None:
    """Its runs are due after the time their ids sort by, so the check would reach them too early."""
    clock.set_clock(clock.FixedClock(datetime.now(UTC).replace(microsecond=0)))
    _, key = new_app("schedule-jitter")
    ep = _endpoint(key, receiver.url("/jittered"))
    resp = call_api(
        "POST",
        "/v1/schedules",
        key=key,
        body={"cron": "*/10 * * * * *", "endpoint_ids": [ep], "jitter_sec": 5},
    )
    assert resp.status == 201, resp.body
    runs = _schedule_runs(str(resp.body["id"]))
    assert runs
    for run in runs:
        jittered = int(run.deliver_at) != int(run.fire_at or 0)
        assert (run.wake_shard is not None) == jittered, (run.deliver_at, run.fire_at)


def test_a_retry_before_the_check_writes_no_wake_entry_and_a_lost_retry_is_found(
    receiver: Receiver, pump: Pump
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    _, key = new_app("retry-check")
    receiver.script("/flaky", Reply(503), Reply(200))
    run_id = _create_run(key, _endpoint(key, receiver.url("/flaky")))
    assert pump.once("DeliveryQueue", "worker") == 1
    waiting = run_data.get(app_of_run(run_id), run_id, consistent=True)
    assert waiting is not None and waiting.status == "retry_scheduled"
    assert not waiting.has_wake_entry and waiting.wake_at is None  # the check is still to read it
    drain_queues()  # the retry's message is lost
    fixed.advance(LAG_SEC)
    report = _scan()
    assert report["runs_checked"] == 1, report  # found: it gets the entry a retry would have had
    fixed.advance(int((int(waiting.deliver_at) - clock.to_ms(fixed.now())) / 1000) + LAG_SEC + 1)
    assert _scan()["runs_enqueued"] == 1
    assert pump.deliveries() == 1
    assert _status(key, run_id) == "success"
    assert len(receiver.received("/flaky")) == 2


def test_a_retry_the_check_may_have_passed_keeps_a_wake_entry(receiver: Receiver, pump: Pump) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    _, key = new_app("retry-late")
    receiver.script("/late-flaky", Reply(503))
    run_id = _create_run(key, _endpoint(key, receiver.url("/late-flaky")))
    fixed.advance(LAG_SEC - 50)  # its first attempt comes late (a backlog): the check may be near
    assert pump.once("DeliveryQueue", "worker") == 1
    waiting = run_data.get(app_of_run(run_id), run_id, consistent=True)
    assert waiting is not None and waiting.status == "retry_scheduled" and waiting.has_wake_entry
