"""Index lag: a write reaches a global secondary index only after the lag (by the clock given), so a
reader of its own write through the index is caught; table reads and settled indexes are unaffected."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from edgecron_cli.local import fidelity
from edgecron_cli.local.consistency import IndexLag, updated_attributes
from edgecron_cli.local.fidelity import AwsFidelity


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def lag(clock: Clock) -> Iterator[IndexLag]:
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    index_lag = IndexLag(1_000, clock)
    with mock_aws():
        hook = AwsFidelity(index_lag).install()
        try:
            boto3.client("dynamodb", region_name="us-east-1").create_table(
                TableName="runs",
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                AttributeDefinitions=[
                    {"AttributeName": "id", "AttributeType": "S"},
                    {"AttributeName": "shard", "AttributeType": "S"},
                    {"AttributeName": "due", "AttributeType": "N"},
                ],
                GlobalSecondaryIndexes=[
                    {
                        "IndexName": "wake",
                        "KeySchema": [
                            {"AttributeName": "shard", "KeyType": "HASH"},
                            {"AttributeName": "due", "KeyType": "RANGE"},
                        ],
                        "Projection": {"ProjectionType": "KEYS_ONLY"},
                    }
                ],
                BillingMode="PAY_PER_REQUEST",
            )
            yield index_lag
        finally:
            hook.uninstall()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def ddb() -> Any:
    return boto3.client("dynamodb", region_name="us-east-1")


def put(run_id: str, due: int = 5) -> None:
    ddb().put_item(TableName="runs", Item={"id": {"S": run_id}, "shard": {"S": "0"}, "due": {"N": str(due)}})


def due_ids() -> list[str]:
    """A reader of the index, the way the scan reads the wake index."""
    got = ddb().query(
        TableName="runs",
        IndexName="wake",
        KeyConditionExpression="shard = :s AND due <= :d",
        ExpressionAttributeValues={":s": {"S": "0"}, ":d": {"N": "10"}},
    )
    assert got["Count"] == len(got["Items"])
    return [item["id"]["S"] for item in got["Items"]]


def test_an_item_reaches_the_index_only_after_the_lag(lag: IndexLag, clock: Clock) -> None:
    put("a")
    assert due_ids() == []  # read-your-own-write through the index: caught
    assert (
        ddb().get_item(TableName="runs", Key={"id": {"S": "a"}})["Item"]["id"]["S"] == "a"
    )  # the table has it
    clock.ms += 999
    assert due_ids() == []
    clock.ms += 1
    assert due_ids() == ["a"]


def test_scan_of_an_index_lags_too(lag: IndexLag, clock: Clock) -> None:
    put("a")
    assert ddb().scan(TableName="runs", IndexName="wake")["Items"] == []
    assert len(ddb().scan(TableName="runs")["Items"]) == 1  # the table itself is read as it is
    clock.ms += 1_000
    assert len(ddb().scan(TableName="runs", IndexName="wake")["Items"]) == 1


def test_only_updates_of_index_keys_make_an_entry_lag(lag: IndexLag, clock: Clock) -> None:
    put("a")
    clock.ms += 1_000
    ddb().update_item(
        TableName="runs",
        Key={"id": {"S": "a"}},
        UpdateExpression="SET #st = :s",
        ExpressionAttributeNames={"#st": "status"},
        ExpressionAttributeValues={":s": {"S": "running"}},
    )
    assert due_ids() == ["a"]  # the index entry did not change
    ddb().update_item(
        TableName="runs",
        Key={"id": {"S": "a"}},
        UpdateExpression="SET #d = :d",
        ExpressionAttributeNames={"#d": "due"},
        ExpressionAttributeValues={":d": {"N": "7"}},
    )
    assert due_ids() == []  # moved in the index: not there yet


def test_a_failed_conditional_write_changes_no_index(lag: IndexLag, clock: Clock) -> None:
    put("a")
    clock.ms += 1_000
    with pytest.raises(ClientError):
        ddb().put_item(
            TableName="runs",
            Item={"id": {"S": "a"}, "shard": {"S": "0"}, "due": {"N": "1"}},
            ConditionExpression="attribute_not_exists(id)",
        )
    assert due_ids() == ["a"]


def test_batch_and_transaction_writes_lag(lag: IndexLag, clock: Clock) -> None:
    item = {"shard": {"S": "0"}, "due": {"N": "3"}}
    ddb().batch_write_item(RequestItems={"runs": [{"PutRequest": {"Item": {"id": {"S": "b"}, **item}}}]})
    ddb().transact_write_items(
        TransactItems=[{"Put": {"TableName": "runs", "Item": {"id": {"S": "t"}, **item}}}]
    )
    assert due_ids() == []
    assert lag.pending() == 2
    clock.ms += 1_000
    assert sorted(due_ids()) == ["b", "t"]


def test_settle_and_unlagged_reads(lag: IndexLag) -> None:
    put("a")
    with lag.unlagged():
        assert due_ids() == ["a"]
    assert due_ids() == []
    lag.settle()
    assert due_ids() == ["a"]


def test_a_clock_set_back_sees_the_index_caught_up(lag: IndexLag, clock: Clock) -> None:
    put("a")
    clock.ms -= 60_000  # a test moved the injected clock to an earlier time
    assert due_ids() == ["a"]


def test_consistent_read_on_a_global_index_is_a_validation_error(lag: IndexLag) -> None:
    with pytest.raises(ClientError) as caught:
        ddb().query(
            TableName="runs",
            IndexName="wake",
            KeyConditionExpression="shard = :s",
            ExpressionAttributeValues={":s": {"S": "0"}},
            ConsistentRead=True,
        )
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "Consistent reads are not supported" in caught.value.response["Error"]["Message"]


def test_updated_attributes_reads_names_and_placeholders() -> None:
    params = {
        "UpdateExpression": "SET #a = :a, b = if_not_exists(b, :z) REMOVE c, #d ADD n :one",
        "ExpressionAttributeNames": {"#a": "wake_at", "#d": "wake_shard"},
    }
    assert updated_attributes(params) == {"wake_at", "b", "c", "wake_shard", "n"}


def test_local_stack_lag_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fidelity.local_gsi_lag_ms({}) == fidelity.DEFAULT_LOCAL_GSI_LAG_MS
    assert fidelity.local_gsi_lag_ms({"EDGECRON_LOCAL_GSI_LAG_MS": "250"}) == 250
    assert fidelity.local_gsi_lag_ms({"EDGECRON_LOCAL_GSI_LAG_MS": "0"}) == 0
    assert (
        fidelity.local_gsi_lag_ms({"EDGECRON_LOCAL_GSI_LAG_MS": "soon"}) == fidelity.DEFAULT_LOCAL_GSI_LAG_MS
    )
    assert fidelity.local_gsi_lag_ms({"EDGECRON_LOCAL_GSI_LAG_MS": "-5"}) == 0
