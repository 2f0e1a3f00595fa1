"""Upgrading a stack whose Task Runs are in the table of earlier releases (key `run_id`) to the table
keyed by App: while both are there, a run of the old table is read, claimed, retried, replayed and
listed as any other (copied over, conditionally, before its first write), delivered once, and the
copy of the rest is resumable and idempotent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from edgecron import clock, ids
from edgecron.config import get_settings
from edgecron.data import legacy_runs
from edgecron.data import runs as run_data
from edgecron.data.keys import run_partition
from edgecron.data.models import TaskRunModel
from edgecron.data.queues import DeliveryMessage, send_deliveries
from edgecron.domain import run_states as st
from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import PROVISIONED, Pump, drain_queues, new_app
from tests.integration.test_delivery import fast_policy, make_endpoint

pytestmark = pytest.mark.index_lag(0)  # the old table's `by_app` index is read right after writes

OLD_TABLE = PROVISIONED.tables["TaskRunsTable"]


@pytest.fixture(autouse=True)
def upgrading(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Deploy 1 of the upgrade: the old table is configured beside the new one; its copy starts over."""
    monkeypatch.setattr(get_settings(), "legacy_runs_table", OLD_TABLE)
    legacy_runs.RunsCheckedModel(app_id=legacy_runs.RUNS_COPIED_APP, checked_key="").save()
    yield
    db = boto3.client("dynamodb", region_name="us-east-1")
    for page in db.get_paginator("scan").paginate(TableName=OLD_TABLE):
        for item in page["Items"]:
            db.delete_item(TableName=OLD_TABLE, Key={"run_id": item["run_id"]})


def old_run(app_id: str, endpoint_id: str, now_ms: int, *, legacy_id: str | None = None) -> str:
    """A pending direct run an earlier release created (and sent) in the old table."""
    run_id = legacy_id or ids.new_id("run", now_ms)
    run = run_data.new_run(
        run_id=run_id,
        app_id=app_id,
        endpoint_id=endpoint_id,
        source="direct",
        source_id=None,
        payload={"old": True},
        deliver_at_ms=now_ms,
        wake_at_ms=None,
        now_ms=now_ms,
    )
    item: dict[str, Any] = run_data.to_row(run).serialize()
    item["created_key"] = {"S": run_data.created_key(now_ms, run_id)}
    boto3.client("dynamodb", region_name="us-east-1").put_item(TableName=OLD_TABLE, Item=item)
    return run_id


def app_of(key: str) -> str:
    from edgecron.services import apps

    app_id = apps.app_for_key(key)
    assert app_id is not None
    return app_id


def in_new_table(app_id: str, run_id: str) -> TaskRunModel | None:
    try:
        return TaskRunModel.get(run_partition(app_id, run_id), run_id, consistent_read=True)
    except TaskRunModel.DoesNotExist:
        return None


def listed(key: str) -> list[str]:
    got: list[str] = []
    cursor = None
    for _ in range(20):
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        resp = call_api("GET", "/v1/task-runs", key=key, query=query)
        assert resp.status == 200, resp.body
        got += [r["id"] for r in resp.body["data"]]
        cursor = resp.body["next_cursor"]
        if cursor is None:
            return got
    raise AssertionError("the list never ended")


def test_an_old_run_is_read_claimed_retried_and_delivered_once_during_the_upgrade(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    app_id = app_of(app_key)
    receiver.script("/old", Reply(500), Reply(200))
    ep = make_endpoint(app_key, receiver.url("/old"), retry_policy_id=fast_policy(app_key))
    now_ms = clock.to_ms(fixed.now())
    run_id = old_run(app_id, str(ep["id"]), now_ms - 1_000)
    assert call_api("GET", f"/v1/task-runs/{run_id}", key=app_key).body["status"] == "pending"
    assert in_new_table(app_id, run_id) is None  # read from the old table
    send_deliveries([DeliveryMessage(run_id, app_id)])  # the message an earlier release sent
    pump.deliveries()  # the first attempt fails: the claim copied the run over first
    copied = in_new_table(app_id, run_id)
    assert copied is not None and copied.status == st.RETRY_SCHEDULED and copied.payload == {"old": True}
    fixed.advance(5)  # the retry is due; its message surfaces after its (wall-clock) delay
    pump.deliveries(quiet_for=3)
    final = call_api("GET", f"/v1/task-runs/{run_id}", key=app_key).body
    assert final["status"] == "success" and final["attempt_count"] == 2, final
    assert len(receiver.received("/old")) == 2  # one request per attempt, none twice
    assert [
        a["status_code"]
        for a in call_api("GET", f"/v1/task-runs/{run_id}/attempts", key=app_key).body["data"]
    ] == [500, 200]


def test_an_old_dead_letter_is_replayed_and_every_run_is_listed_once_during_the_copy(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    app_id = app_of(app_key)
    ep = str(make_endpoint(app_key, receiver.url("/replayed"))["id"])
    now_ms = clock.to_ms(fixed.now())
    old = [old_run(app_id, ep, now_ms - 60_000 + i) for i in range(3)]
    drain_queues()
    dead = run_data.get(app_id, old[0], consistent=True)
    assert dead is not None and run_data.poison(dead, now_ms, "made a dead letter for the test")
    created = call_api("POST", "/v1/task-runs", key=app_key, body={"endpoint_id": ep, "delay_sec": 600}).body
    assert listed(app_key) == [created["id"], old[0], old[2], old[1]]  # copied, then new-table order
    replayed = call_api("POST", f"/v1/dead-letters/{old[0]}/replay", key=app_key)
    assert replayed.status == 200 and replayed.body["status"] == "pending", replayed.body
    pump.deliveries()
    assert call_api("GET", f"/v1/task-runs/{old[0]}", key=app_key).body["status"] == "success"
    assert len(receiver.received("/replayed")) == 1
    other_app, other_key = new_app("upgrade-other")
    assert listed(other_key) == []
    assert run_data.get(other_app, old[1]) is None  # another App's run, in either table, is none


def test_the_copy_is_resumable_and_idempotent(app_key: str, receiver: Receiver) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    app_id = app_of(app_key)
    ep = str(make_endpoint(app_key, receiver.url("/copied"))["id"])
    now_ms = clock.to_ms(fixed.now())
    old = [old_run(app_id, ep, now_ms - 300_000 + i) for i in range(legacy_runs.COPY_PAGE + 30)]
    drain_queues()
    claimed = run_data.claim(app_id, old[5], now_ms)  # copied before the copy reaches it, then changed
    assert claimed is not None
    copied, done = legacy_runs.copy_step(now_ms)  # interrupted after its first page
    assert not done and 0 < copied <= legacy_runs.COPY_PAGE
    mark = legacy_runs.RunsCheckedModel.get(legacy_runs.RUNS_COPIED_APP, "runs-checked", consistent_read=True)
    legacy_runs.RunsCheckedModel(app_id=legacy_runs.RUNS_COPIED_APP, checked_key="").save()
    again, _ = legacy_runs.copy_step(now_ms)  # the same page once more: nothing copied twice
    assert again == 0
    mark.save()  # resumed where it stopped
    total = copied
    while not done:
        n, done = legacy_runs.copy_step(now_ms)
        total += n
    assert total == len(old) - 1  # the claimed run was copied by its claim
    assert legacy_runs.copy_done()
    runs = [in_new_table(app_id, run_id) for run_id in old]
    assert all(run is not None for run in runs)
    assert runs[5] is not None and runs[5].status == st.RUNNING  # the copy never overwrote it
    # the unfinished runs an earlier release sent at creation are looked after by the wake index
    assert all(r is not None and r.wake_shard is not None for i, r in enumerate(runs) if i != 5)
    assert legacy_runs.copy_step(now_ms) == (0, True)  # a later scan tick or deploy finds it done


def test_a_fan_out_an_earlier_release_started_creates_no_second_run(app_key: str, receiver: Receiver) -> None:
    from edgecron.services.events import legacy_run_id_for, run_id_for

    app_id = app_of(app_key)
    ep = str(make_endpoint(app_key, receiver.url("/fanned"))["id"])
    event_id = ids.new_id("evt")
    now_ms = clock.to_ms(clock.now())
    old_run(app_id, ep, now_ms, legacy_id=legacy_run_id_for(event_id, ep))  # made before the deploy
    run = run_data.new_run(
        run_id=run_id_for(event_id, ep),
        app_id=app_id,
        endpoint_id=ep,
        source="event",
        source_id=event_id,
        payload=None,
        deliver_at_ms=now_ms,
        wake_at_ms=None,
        now_ms=now_ms,
    )
    assert not run_data.put_new(run, legacy_id=legacy_run_id_for(event_id, ep))
    assert in_new_table(app_id, run.run_id) is None
    assert json.dumps(run_id_for(event_id, ep)) != json.dumps(legacy_run_id_for(event_id, ep))


def test_a_run_either_table_holds_under_either_id_is_not_created_again(
    app_key: str, receiver: Receiver
) -> None:
    """Its own id in the old table, its earlier release's id in either table (a copied run keeps its
    id), or its own id in the new one: each makes the put a no-op, so no run is created twice."""
    app_id = app_of(app_key)
    ep = str(make_endpoint(app_key, receiver.url("/twice"))["id"])
    now_ms = clock.to_ms(clock.now())

    def fresh(run_id: str) -> TaskRunModel:
        return run_data.new_run(
            run_id=run_id,
            app_id=app_id,
            endpoint_id=ep,
            source="event",
            source_id="evt_1",
            payload=None,
            deliver_at_ms=now_ms,
            wake_at_ms=None,
            now_ms=now_ms,
        )

    in_old = old_run(app_id, ep, now_ms)
    assert not run_data.put_new(fresh(in_old))
    assert in_new_table(app_id, in_old) is None

    old_id = old_run(app_id, ep, now_ms)
    assert not run_data.put_new(fresh(ids.new_id("run", now_ms)), legacy_id=old_id)

    copied = ids.new_id("run", now_ms)
    assert run_data.put_new(fresh(copied))  # in the new table only (as a copy would be)
    assert not run_data.put_new(fresh(ids.new_id("run", now_ms)), legacy_id=copied)
    assert not run_data.put_new(fresh(copied))
    assert run_data.put_new(fresh(ids.new_id("run", now_ms)), legacy_id=ids.new_id("run", now_ms))
