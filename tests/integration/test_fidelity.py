"""The harness imitates what moto lacks: index reads that lag their writes, TTL deletion, AWS limits.
Each test shows a bug of its kind caught: a deliberately naive reader or writer here, not product
code, that passes against plain moto and would fail in AWS."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from pynamodb.exceptions import QueryError

from edgecron import clock, ids
from edgecron.config import get_settings
from edgecron.data import runs as run_data
from edgecron.data.models import TaskRunModel
from edgecron_testing.aws_fidelity import IndexTime, TtlDeletion
from edgecron_testing.harness import call_api, invoke
from edgecron_testing.inprocess import app_of_run, stored_run
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import PROVISIONED, Pump, new_app

T0 = datetime(2026, 9, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def fixed() -> clock.FixedClock:
    c = clock.FixedClock(T0)
    clock.set_clock(c)
    return c


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def waiting_run(now: datetime, deliver_at: datetime, expires_at: datetime | None = None) -> TaskRunModel:
    """A run waiting for the scan, written the way the API writes one; `expires_at` overrides its TTL."""
    now_ms = clock.to_ms(now)
    run = run_data.new_run(
        run_id=ids.new_id("run", now_ms),
        app_id="app_fidelity",
        endpoint_id="ep_fidelity",
        source="direct",
        source_id=None,
        payload=None,
        deliver_at_ms=clock.to_ms(deliver_at),
        wake_at_ms=clock.to_ms(deliver_at),
        now_ms=now_ms,
    )
    if expires_at is not None:
        run = replace(run, expires_at=int(expires_at.timestamp()))
    assert run_data.put_new(run)
    stored = stored_run(run.run_id)
    assert stored is not None
    return stored


def naive_due_runs(shard: str, now: datetime) -> set[str]:
    """Reads the wake index and trusts it, as a scan would that expects to see what it just wrote."""
    return {e.run_id for e in TaskRunModel.wake.query(shard, TaskRunModel.wake_at <= clock.to_ms(now))}


# index lag --------------------------------------------------------------------------------------------


def test_reading_a_due_run_through_the_index_right_after_writing_it_is_caught(
    fixed: clock.FixedClock, index_time: IndexTime
) -> None:
    assert index_time.lag_ms > 0  # on by default
    run = waiting_run(fixed.now(), fixed.now())
    assert run.wake_shard is not None
    assert run.run_id not in naive_due_runs(run.wake_shard, fixed.now())  # plain moto would list it
    assert (
        run_data.get(app_of_run(run.run_id), run.run_id, consistent=True) is not None
    )  # the table has it at once
    fixed.advance(index_time.lag_ms / 1000)
    assert run.run_id in naive_due_runs(run.wake_shard, fixed.now())


def test_a_test_can_settle_the_indexes_or_read_them_unlagged(
    fixed: clock.FixedClock, index_time: IndexTime
) -> None:
    run = waiting_run(fixed.now(), fixed.now())
    assert run.wake_shard is not None
    with index_time.unlagged():
        assert run.run_id in naive_due_runs(run.wake_shard, fixed.now())
    assert index_time.pending() >= 1
    index_time.settle()
    assert run.run_id in naive_due_runs(run.wake_shard, fixed.now())


@pytest.mark.index_lag(0)
def test_a_module_or_test_can_turn_the_lag_off(fixed: clock.FixedClock, index_time: IndexTime) -> None:
    run = waiting_run(fixed.now(), fixed.now())
    assert run.wake_shard is not None
    assert index_time.lag_ms == 0
    assert run.run_id in naive_due_runs(run.wake_shard, fixed.now())


def test_the_scan_dispatches_a_run_written_just_before_once_the_index_caught_up(
    fixed: clock.FixedClock, index_time: IndexTime, pump: Pump, receiver: Receiver
) -> None:
    """The product's own reader copes: a run the index does not show yet is dispatched by a later scan."""
    _, key = new_app("lagging")
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url("/lag")}).body["id"]
    created = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep, "delay_sec": 3600})
    assert created.status == 201, created.body
    fixed.advance(3600)
    invoke("scan", {"detail": {}})
    pump.deliveries(quiet_for=1.0, timeout=10)
    assert len(receiver.received("/lag")) == 1


def test_a_consistent_read_of_an_index_is_refused_as_aws_does(index_time: IndexTime) -> None:
    with pytest.raises(QueryError) as caught:
        list(TaskRunModel.wake.query("0", consistent_read=True))
    assert caught.value.cause_response_code == "ValidationException"


# TTL deletion ---------------------------------------------------------------------------------------


def test_ttl_deletion_covers_every_table_the_template_gives_a_ttl(ttl: TtlDeletion) -> None:
    expected = {
        PROVISIONED.tables[logical_id]
        for logical_id, resource in PROVISIONED.template.resources.items()
        if resource.get("Type") == "AWS::DynamoDB::Table"
        and (resource.get("Properties") or {}).get("TimeToLiveSpecification", {}).get("Enabled")
    }
    # other stacks provisioned in the same moto (the provisioning tests) have their own tables
    ours = {name for name in ttl.tables() if name.startswith(PROVISIONED.name_prefix)}
    assert expected and ours == expected


def test_an_item_needed_after_its_ttl_is_caught(fixed: clock.FixedClock, ttl: TtlDeletion) -> None:
    """A naive writer gives a run due in 120 days the history TTL counted from its creation."""
    due = T0 + timedelta(days=120)
    naive = waiting_run(T0, due, expires_at=T0 + timedelta(days=get_settings().history_ttl_days))
    careful = waiting_run(T0, due, expires_at=due + timedelta(days=get_settings().history_ttl_days))
    fixed.set(due - timedelta(seconds=30))
    assert ttl.sweep() >= 1
    assert (
        run_data.get(app_of_run(naive.run_id), naive.run_id, consistent=True) is None
    )  # moto alone would still have it
    assert run_data.get(app_of_run(careful.run_id), careful.run_id, consistent=True) is not None


def test_ttl_deletion_spares_unexpired_items(fixed: clock.FixedClock, ttl: TtlDeletion) -> None:
    run = waiting_run(T0, T0 + timedelta(minutes=5))
    assert run.expires_at is not None
    ttl.sweep()
    fixed.set(datetime.fromtimestamp(run.expires_at - 1, UTC))
    ttl.sweep()
    assert run_data.get(app_of_run(run.run_id), run.run_id, consistent=True) is not None
    fixed.advance(2)
    ttl.sweep()
    assert run_data.get(app_of_run(run.run_id), run.run_id, consistent=True) is None


def test_a_run_delayed_beyond_the_history_ttl_is_still_delivered(
    fixed: clock.FixedClock, ttl: TtlDeletion, pump: Pump, receiver: Receiver
) -> None:
    _, key = new_app("far")
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url("/far")}).body["id"]
    created = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep, "delay_sec": 120 * 86_400})
    assert created.status == 201, created.body
    fixed.advance(120 * 86_400 - 2)  # due in 2 s: the scan sends it with DelaySeconds=2
    ttl.sweep()  # DynamoDB may have deleted whatever expired by now
    invoke("scan", {"detail": {}})
    fixed.advance(2)
    pump.deliveries(quiet_for=3, timeout=10)
    assert len(receiver.received("/far")) == 1


# limits ---------------------------------------------------------------------------------------------


def alert_subjects_after_auto_pause(schedule_name: str) -> list[str]:
    """Auto-pause a schedule of this name and return the Subjects the alerts topic delivered to a
    queue subscribed to it."""
    from edgecron.data import schedules as schedule_data
    from edgecron.data.models import FireModel
    from edgecron.services.fires import settle

    sqs: Any = boto3.client("sqs", region_name="us-east-1")
    sns: Any = boto3.client("sns", region_name="us-east-1")
    url = sqs.create_queue(QueueName=f"alerts-{ids.new_id('q', clock.to_ms(clock.now()))[-12:]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    topic = get_settings().alerts_topic_arn
    assert topic
    subscription = sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)["SubscriptionArn"]
    try:
        app_id, key = new_app("alerts")
        ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
        body = {"cron": "0 0 1 1 *", "endpoint_ids": [ep], "name": schedule_name, "status": "PAUSED"}
        created = call_api("POST", "/v1/schedules", key=key, body=body)
        assert created.status == 201, created.body
        schedule = schedule_data.get_timed(app_id, created.body["id"])
        assert schedule is not None
        now_ms = clock.to_ms(clock.now())
        fire = FireModel(
            schedule_id=schedule.schedule_id,
            fire_at=now_ms,
            app_id=app_id,
            status="FAILED",
            created_at=now_ms,
        )
        settle._auto_paused(fire, 3, "http 500", now_ms)
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        import json

        return [json.loads(m["Body"]).get("Subject", "") for m in got]
    finally:
        sns.unsubscribe(SubscriptionArn=subscription)
        sqs.delete_queue(QueueUrl=url)


def test_an_auto_pause_alert_reaches_the_alerts_topic() -> None:
    assert alert_subjects_after_auto_pause("nightly backup") == [
        "EdgeCron schedule auto-paused: nightly backup"
    ]


def test_an_auto_pause_alert_is_published_whatever_the_schedule_name() -> None:
    """SNS refuses a Subject with a line break (InvalidParameter); the schedule name may hold one."""
    assert alert_subjects_after_auto_pause("nightly\nbackup\u00e9") == [
        "EdgeCron schedule auto-paused: nightly backup"
    ]


def test_aws_limits_are_enforced_in_the_harness() -> None:
    sqs: Any = boto3.client("sqs", region_name="us-east-1")
    url = PROVISIONED.queues["DeliveryQueue"].url
    with pytest.raises(ClientError) as caught:
        sqs.send_message(QueueUrl=url, MessageBody="x" * (256 * 1024 + 1))
    assert caught.value.response["Error"]["Code"] == "InvalidParameterValue"
    with pytest.raises(sqs.exceptions.BatchRequestTooLong):
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "x" * 30_000} for i in range(9)]
        )
    ddb: Any = boto3.client("dynamodb", region_name="us-east-1")
    table = PROVISIONED.tables["IdempotencyTable"]
    with pytest.raises(ClientError) as caught:
        ddb.batch_write_item(
            RequestItems={table: [{"DeleteRequest": {"Key": {"idem_key": {"S": str(i)}}}} for i in range(26)]}
        )
    assert caught.value.response["Error"]["Code"] == "ValidationException"
