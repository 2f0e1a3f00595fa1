"""The local stack's fidelity hook composes with its moto: calls answered by moto's process through the
gate get the limits and the index lag, and the TTL sweep deletes through the gate (counted for snapshots)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from edgecron_cli.local.fidelity import install_for_local_stack
from edgecron_cli.local.intrinsics import REGION
from edgecron_cli.local.moto_process import MotoProcess
from edgecron_cli.local.ttl import TtlSweeper


def client(server: MotoProcess, service: str) -> Any:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    return session.client(service, endpoint_url=server.endpoint_url)


def indexed_table(server: MotoProcess) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    client(server, "dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "id", "AttributeType": "S"},
            {"AttributeName": "shard", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_shard",
                "KeySchema": [{"AttributeName": "shard", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def test_the_local_stack_lags_index_reads_and_enforces_limits(moto: MotoProcess) -> None:
    table = indexed_table(moto)
    hook = install_for_local_stack({"EDGECRON_LOCAL_GSI_LAG_MS": "600000"})  # ten minutes: never reached here
    try:
        assert hook.lag is not None and hook.lag.lag_ms == 600_000
        ddb = client(moto, "dynamodb")
        ddb.put_item(TableName=table, Item={"id": {"S": "a"}, "shard": {"S": "0"}})

        def by_shard() -> list[dict[str, Any]]:
            return list(
                ddb.query(
                    TableName=table,
                    IndexName="by_shard",
                    KeyConditionExpression="shard = :s",
                    ExpressionAttributeValues={":s": {"S": "0"}},
                )["Items"]
            )

        assert by_shard() == []
        hook.lag.settle()
        assert [item["id"]["S"] for item in by_shard()] == ["a"]
        sqs = client(moto, "sqs")
        url = sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        with pytest.raises(ClientError) as caught:
            sqs.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=-1)
        assert caught.value.response["Error"]["Code"] == "InvalidParameterValue"
    finally:
        hook.uninstall()


def test_the_local_stack_without_lag(moto: MotoProcess) -> None:
    hook = install_for_local_stack({"EDGECRON_LOCAL_GSI_LAG_MS": "0"})
    try:
        assert hook.lag is None and hook.enforce_limits
    finally:
        hook.uninstall()


def test_the_ttl_sweep_deletes_through_the_gate(moto: MotoProcess) -> None:
    ddb = client(moto, "dynamodb")
    table = indexed_table(moto)
    ddb.update_time_to_live(
        TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"}
    )
    now = time.time()
    ddb.put_item(TableName=table, Item={"id": {"S": "old"}, "exp": {"N": str(int(now) - 10)}})
    ddb.put_item(TableName=table, Item={"id": {"S": "new"}, "exp": {"N": str(int(now) + 3600)}})
    changes = moto.changes()
    sweeper = TtlSweeper(ddb, moto.table_items)
    assert table in sweeper.tables()
    assert sweeper.sweep(now) >= 1
    assert [item["id"]["S"] for item in moto.table_items(table)] == ["new"]
    assert moto.changes() > changes  # the snapshot will see the deletion
