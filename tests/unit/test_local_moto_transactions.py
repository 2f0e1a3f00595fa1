"""A cancelled transaction leaves the tables as they were, with the item-level backup as with moto's
whole-table one; a successful one writes every item."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from edgecron_cli.local import moto_transactions


@pytest.fixture
def ddb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="t", Item={"k": {"S": "old"}, "v": {"N": "1"}})
        yield client


def items(ddb: Any) -> dict[str, dict[str, Any]]:
    return {i["k"]["S"]: i for i in ddb.scan(TableName="t")["Items"]}


def cancelled_transaction(ddb: Any) -> None:
    with pytest.raises(ClientError) as caught:
        ddb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "t", "Item": {"k": {"S": "new"}}}},
                {
                    "Update": {
                        "TableName": "t",
                        "Key": {"k": {"S": "old"}},
                        "UpdateExpression": "SET v = :v",
                        "ExpressionAttributeValues": {":v": {"N": "2"}},
                    }
                },
                {
                    "ConditionCheck": {
                        "TableName": "t",
                        "Key": {"k": {"S": "absent"}},
                        "ConditionExpression": "attribute_exists(k)",
                    }
                },
            ]
        )
    assert caught.value.response["Error"]["Code"] == "TransactionCanceledException"


def test_a_cancelled_transaction_changes_nothing_with_either_backup(ddb: Any) -> None:
    cancelled_transaction(ddb)
    by_moto = items(ddb)
    assert moto_transactions.install()
    cancelled_transaction(ddb)
    assert items(ddb) == by_moto == {"old": {"k": {"S": "old"}, "v": {"N": "1"}}}


def test_a_transaction_that_succeeds_writes_every_item(ddb: Any) -> None:
    assert moto_transactions.install()
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "t", "Item": {"k": {"S": "new"}}}},
            {"Delete": {"TableName": "t", "Key": {"k": {"S": "old"}}}},
        ]
    )
    assert items(ddb) == {"new": {"k": {"S": "new"}}}
