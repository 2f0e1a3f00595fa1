"""TTL deletion as DynamoDB does it: items whose Number TTL attribute has passed are deleted, others
(no TTL, not a Number, expired more than five years ago, TTL moved meanwhile) stay."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from edgecron_cli.local import ttl
from edgecron_cli.local.ttl import FIVE_YEARS_S, TtlSweeper, is_expired

NOW = 1_800_000_000


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for name, ttl_on in (("history", True), ("apps", False)):
            client.create_table(
                TableName=name,
                KeySchema=[
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                AttributeDefinitions=[
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "N"},
                ],
                BillingMode="PAY_PER_REQUEST",
            )
            if ttl_on:
                client.update_time_to_live(
                    TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
                )
        yield client
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def put(client: Any, table: str, sk: int, expires: dict[str, Any] | None) -> None:
    item: dict[str, Any] = {"pk": {"S": "p"}, "sk": {"N": str(sk)}}
    if expires is not None:
        item["expires_at"] = expires
    client.put_item(TableName=table, Item=item)


def keys(client: Any, table: str) -> list[int]:
    return sorted(int(item["sk"]["N"]) for item in client.scan(TableName=table)["Items"])


def test_is_expired_follows_dynamodb_rules() -> None:
    assert is_expired({"N": str(NOW - 1)}, NOW)
    assert not is_expired({"N": str(NOW)}, NOW)  # deleted only once the second has passed
    assert not is_expired({"N": str(NOW + 10)}, NOW)
    assert is_expired({"N": str(NOW - FIVE_YEARS_S)}, NOW)
    assert not is_expired({"N": str(NOW - FIVE_YEARS_S - 1)}, NOW)  # older than five years: kept
    assert not is_expired({"S": str(NOW - 1)}, NOW)  # not a Number: never deleted
    assert not is_expired({"N": "soon"}, NOW)
    assert not is_expired(None, NOW)


def test_sweep_deletes_expired_items_of_ttl_tables_only(dynamodb: Any) -> None:
    put(dynamodb, "history", 1, {"N": str(NOW - 60)})
    put(dynamodb, "history", 2, {"N": str(NOW + 60)})
    put(dynamodb, "history", 3, None)
    put(dynamodb, "history", 4, {"S": "1"})
    put(dynamodb, "apps", 1, {"N": str(NOW - 60)})  # no TTL on this table
    sweeper = TtlSweeper(dynamodb)
    assert sweeper.tables() == {"history": ("expires_at", ("pk", "sk"))}
    assert sweeper.sweep(NOW) == 1
    assert keys(dynamodb, "history") == [2, 3, 4]
    assert keys(dynamodb, "apps") == [1]
    assert sweeper.sweep(NOW + 61) == 1  # the next one, once it has expired
    assert keys(dynamodb, "history") == [3, 4]


def test_an_item_whose_ttl_moved_since_it_was_listed_stays(dynamodb: Any) -> None:
    put(dynamodb, "history", 1, {"N": str(NOW - 60)})
    listed = dynamodb.scan(TableName="history")["Items"]
    put(dynamodb, "history", 1, {"N": str(NOW + 3600)})  # extended after the sweep listed it
    assert TtlSweeper(dynamodb, lambda table: listed).sweep(NOW) == 0
    assert keys(dynamodb, "history") == [1]


def test_background_sweeps_stop_when_asked(dynamodb: Any) -> None:
    put(dynamodb, "history", 1, {"N": "1"})
    stop = threading.Event()
    stop.set()
    ttl.run_sweeps(TtlSweeper(dynamodb), 0.01, stop)  # returns at once, without sweeping
    assert keys(dynamodb, "history") == [1]


def test_local_stack_sweep_setting() -> None:
    assert ttl.local_sweep_interval({}) == ttl.DEFAULT_LOCAL_SWEEP_SEC
    assert ttl.local_sweep_interval({"EDGECRON_LOCAL_TTL_SWEEP_SEC": "5"}) == 5
    assert ttl.local_sweep_interval({"EDGECRON_LOCAL_TTL_SWEEP_SEC": "0"}) == 0
    assert ttl.local_sweep_interval({"EDGECRON_LOCAL_TTL_SWEEP_SEC": "x"}) == ttl.DEFAULT_LOCAL_SWEEP_SEC
