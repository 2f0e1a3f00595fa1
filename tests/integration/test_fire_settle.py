"""A Fire follows its runs. The only run of a Fire bound to one Endpoint decides the Fire's status
alone, so its worker settles the Fire without reading it first, and when that run completes at its
first attempt the Fire keeps its dispatched item and reads as its run; a Fire with several runs is
read and settles when the last of them is final."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from edgecron import clock
from edgecron.data import fires as fire_data
from edgecron.data import schedules as schedule_data
from edgecron.data.models import FireModel, TaskRunModel
from edgecron.services import schedule_history
from edgecron_testing.aws_fidelity import IndexTime
from edgecron_testing.harness import call_api, invoke, new_endpoint, new_schedule
from edgecron_testing.inprocess import Pump, TableCalls, due_walk_left_at, new_app
from edgecron_testing.receiver import Receiver, Reply


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _fire_now(key: str, endpoint_ids: list[str]) -> str:
    return str(new_schedule(key, at=clock.now().isoformat(), endpoint_ids=endpoint_ids)["id"])


def _fire(schedule_id: str) -> FireModel:
    fires = list(FireModel.query(schedule_id, consistent_read=True))
    assert len(fires) == 1
    return fires[0]


def test_the_only_run_of_a_fire_settles_it_without_reading_it(receiver: Receiver, pump: Pump) -> None:
    clock.set_clock(clock.FixedClock(datetime.now(UTC).replace(microsecond=0)))
    _, key = new_app("settle-alone")
    schedule_id = _fire_now(key, [new_endpoint(key, receiver.url("/alone"))])
    (run,) = TaskRunModel.scan(TaskRunModel.source_id == schedule_id)
    assert run.settles_fire is True
    with TableCalls(FireModel, "GetItem") as counted:
        assert pump.deliveries() == 1
    assert counted.calls == 0
    fire = _fire(schedule_id)
    assert fire.status == "COMPLETED" and fire.finished_at is not None


def test_a_failed_only_run_fails_its_fire_with_the_error_and_counts_toward_auto_pause(
    receiver: Receiver, pump: Pump
) -> None:
    clock.set_clock(clock.FixedClock(datetime.now(UTC).replace(microsecond=0)))
    app_id, key = new_app("settle-alone-failed")
    receiver.script("/refused", Reply(400))
    policy = call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 1}).body["id"]
    ep = new_endpoint(key, receiver.url("/refused"), retry_policy_id=policy)
    schedule_id = _fire_now(key, [ep])
    assert pump.deliveries() == 1
    fire = _fire(schedule_id)
    assert fire.status == "FAILED" and fire.error and "400" in fire.error
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.consecutive_failures == 1


def test_a_fire_with_two_runs_settles_when_the_second_is_final(receiver: Receiver, pump: Pump) -> None:
    clock.set_clock(clock.FixedClock(datetime.now(UTC).replace(microsecond=0)))
    _, key = new_app("settle-two")
    receiver.script("/slow-second", Reply(503))
    first, second = new_endpoint(key, receiver.url("/first")), new_endpoint(key, receiver.url("/slow-second"))
    schedule_id = _fire_now(key, [first, second])
    runs = list(TaskRunModel.scan(TaskRunModel.source_id == schedule_id))
    assert len(runs) == 2 and not any(r.settles_fire for r in runs)
    assert pump.deliveries() == 2  # the second is retried later
    assert _fire(schedule_id).status == "SCHEDULED"


def test_a_fire_an_earlier_release_wrote_with_its_counted_flag_reads_and_settles(
    receiver: Receiver, pump: Pump
) -> None:
    clock.set_clock(clock.FixedClock(datetime.now(UTC).replace(microsecond=0)))
    _, key = new_app("settle-earlier-item")
    receiver.script("/later", Reply(503))
    schedule_id = _fire_now(key, [new_endpoint(key, receiver.url("/later"))])
    assert pump.deliveries() == 1  # answered 503: the Fire stays open for the retry
    stored = _fire(schedule_id)
    client = FireModel._get_connection().connection.client
    client.update_item(  # the flag earlier releases wrote on every Fire, which nothing reads now
        TableName=FireModel.Meta.table_name,
        Key={"schedule_id": {"S": schedule_id}, "fire_at": {"N": str(int(stored.fire_at))}},
        UpdateExpression="SET #c = :f",
        ExpressionAttributeNames={"#c": "counted"},
        ExpressionAttributeValues={":f": {"BOOL": False}},
    )
    fire = fire_data.get(schedule_id, int(stored.fire_at))
    assert fire is not None and fire.is_open
    assert call_api("POST", f"/v1/schedules/{schedule_id}/pause", key=key).status == 200
    assert _fire(schedule_id).status == "CANCELLED"


T9 = datetime(2026, 12, 3, 9, 0, 0, tzinfo=UTC)
SCAN_EVENT = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


def _daily_fired(key: str, url: str, index_time: IndexTime, **body: object) -> str:
    """A daily schedule at 10:00 UTC, created at 09:00 and dispatched by the tick at 10:00."""
    clock.set_clock(clock.FixedClock(T9))
    ep = new_endpoint(key, url)
    schedule_id = str(new_schedule(key, cron="0 10 * * *", endpoint_ids=[ep], **body)["id"])
    due_walk_left_at(clock.to_ms(T9 + timedelta(minutes=59)))
    index_time.settle()
    clock.set_clock(clock.FixedClock(T9 + timedelta(hours=1)))
    invoke("scan", SCAN_EVENT)
    return schedule_id


def _shown(key: str, schedule_id: str) -> dict[str, object]:
    resp = call_api("GET", f"/v1/schedules/{schedule_id}/fires", key=key)
    assert resp.status == 200, resp.body
    (fire,) = resp.body["data"]
    return dict(fire)


def test_a_cron_fire_whose_run_completes_at_once_is_not_written_again_and_reads_completed(
    receiver: Receiver, pump: Pump, index_time: IndexTime
) -> None:
    _, key = new_app("settle-unwritten")
    schedule_id = _daily_fired(key, receiver.url("/at-once"), index_time)
    with TableCalls(FireModel, "UpdateItem") as written:
        assert pump.deliveries() == 1
    assert written.calls == 0
    stored = _fire(schedule_id)
    assert stored.status == "SCHEDULED" and stored.open_shard is None
    shown = _shown(key, schedule_id)
    assert shown["status"] == "COMPLETED" and shown["finished_at"] is not None
    written = fire_data.get(schedule_id, int(stored.fire_at))
    assert written is not None and written.is_open  # as dispatched
    shown_fire, _ = schedule_history.fire_with_runs(written)
    assert shown_fire.status == "COMPLETED" and not shown_fire.is_open


def test_a_pause_after_a_completed_unwritten_fire_leaves_it_completed(
    receiver: Receiver, pump: Pump, index_time: IndexTime
) -> None:
    _, key = new_app("settle-unwritten-pause")
    schedule_id = _daily_fired(key, receiver.url("/then-pause"), index_time)
    assert pump.deliveries() == 1
    with TableCalls(FireModel, "UpdateItem") as written:
        assert call_api("POST", f"/v1/schedules/{schedule_id}/pause", key=key).status == 200
    assert written.calls == 0
    assert _shown(key, schedule_id)["status"] == "COMPLETED"
    (run,) = TaskRunModel.scan(TaskRunModel.source_id == schedule_id)
    assert run.status == "success"


def test_a_success_after_a_failed_fire_writes_its_fire_and_resets_the_failure_count(
    receiver: Receiver, pump: Pump, index_time: IndexTime
) -> None:
    app_id, key = new_app("settle-after-failure")
    schedule_id = _daily_fired(key, receiver.url("/recovered"), index_time)
    stored = schedule_data.get_timed(app_id, schedule_id, consistent=True)
    assert stored is not None
    schedule_data.record_outcome(app_id, schedule_id, True, 3, clock.to_ms(clock.now()))
    assert pump.deliveries() == 1
    assert _fire(schedule_id).status == "COMPLETED"
    after = schedule_data.get_timed(app_id, schedule_id, consistent=True)
    assert after is not None and after.consecutive_failures == 0


def test_a_fire_whose_run_completes_after_a_retry_is_written_and_leaves_the_open_fires(
    receiver: Receiver, pump: Pump, index_time: IndexTime
) -> None:
    _, key = new_app("settle-after-retry")
    receiver.script("/second-time", Reply(503), Reply(200))
    policy = call_api(
        "POST", "/v1/retry-policies", key=key, body={"max_attempts": 3, "base_delay_sec": 1}
    ).body["id"]
    schedule_id = _daily_fired(key, receiver.url("/second-time"), index_time, retry_policy_id=policy)
    assert pump.deliveries() == 1
    assert _fire(schedule_id).open_shard is not None  # waits for its retry among the open Fires
    clock.set_clock(clock.FixedClock(T9 + timedelta(hours=1, seconds=30)))
    pump.deliveries(until=lambda: _fire(schedule_id).status != "SCHEDULED", timeout=20)
    settled = _fire(schedule_id)
    assert settled.status == "COMPLETED" and settled.open_shard is None
