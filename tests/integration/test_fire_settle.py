"""A Fire follows its runs. The only run of a Fire bound to one Endpoint decides the Fire's status
alone, so its worker settles the Fire without reading it first; a Fire with several runs is read and
settles when the last of them is final."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from edgecron import clock
from edgecron.data import fires as fire_data
from edgecron.data import schedules as schedule_data
from edgecron.data.models import FireModel, TaskRunModel
from edgecron_testing.harness import call_api, new_endpoint, new_schedule
from edgecron_testing.inprocess import Pump, TableCalls, new_app
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
    stored = schedule_data.get(app_id, schedule_id)
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
