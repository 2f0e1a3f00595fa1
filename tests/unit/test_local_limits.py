"""AWS limits in the test harness and the local stack: one test per limit shows the call refused with
the error AWS returns, and whether moto refuses it alone (`by_moto`) or only with the fidelity hook
(cli/edgecron_cli/local/limits.py). A limit moto starts enforcing shows up here as a failure of
the "moto alone accepts it" half: the hook's check can then go."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from edgecron_cli.local import limits
from edgecron_cli.local.fidelity import AwsFidelity

KIB = 1024


@pytest.fixture
def aws() -> Iterator[None]:
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    with mock_aws():
        yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def sqs(aws: None) -> tuple[Any, str]:
    client = boto3.client("sqs", region_name="us-east-1")
    return client, client.create_queue(QueueName="limits")["QueueUrl"]


@pytest.fixture
def table(aws: None) -> tuple[Any, str]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.create_table(
        TableName="limits",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return client, "limits"


def refusal(call: Callable[[], Any], *, hook: bool) -> dict[str, Any] | None:
    """The error of `call` (None if accepted), with or without the fidelity hook installed."""
    fidelity = AwsFidelity().install() if hook else None
    try:
        call()
    except ClientError as exc:
        return dict(exc.response["Error"])
    finally:
        if fidelity is not None:
            fidelity.uninstall()
    return None


def assert_limit(call: Callable[[], Any], code: str, *, by_moto: bool) -> dict[str, Any]:
    error = refusal(call, hook=True)
    assert error is not None and error["Code"] == code, error
    alone = refusal(call, hook=False)
    if by_moto:
        assert alone is not None and alone["Code"] == code, alone
    else:
        assert alone is None, alone
    return error


# SQS ------------------------------------------------------------------------------------------------


def test_sqs_message_over_256_kib_in_utf8_bytes_is_invalid(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    body = "é" * (128 * KIB + 1)  # 128 Ki characters: 256 KiB + 2 bytes
    error = assert_limit(
        lambda: client.send_message(QueueUrl=url, MessageBody=body), "InvalidParameterValue", by_moto=False
    )
    assert "262144 bytes" in error["Message"]
    client.send_message(QueueUrl=url, MessageBody="é" * (128 * KIB))  # exactly 256 KiB passes


def test_sqs_message_attributes_count_toward_the_message_size(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    attributes = {"big": {"DataType": "String", "StringValue": "y" * (100 * KIB)}}
    assert_limit(
        lambda: client.send_message(
            QueueUrl=url, MessageBody="x" * (200 * KIB), MessageAttributes=attributes
        ),
        "InvalidParameterValue",
        by_moto=False,
    )


def test_sqs_batch_over_256_kib_in_total_is_batch_request_too_long(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    entries = [{"Id": str(i), "MessageBody": "x" * (30 * KIB)} for i in range(9)]  # 270 KiB
    error = assert_limit(
        lambda: client.send_message_batch(QueueUrl=url, Entries=entries),
        "AWS.SimpleQueueService.BatchRequestTooLong",
        by_moto=False,
    )
    assert error["QueryErrorCode"] == "BatchRequestTooLong"
    fidelity = AwsFidelity().install()
    try:
        with pytest.raises(client.exceptions.BatchRequestTooLong):  # the modeled exception, as from SQS
            client.send_message_batch(QueueUrl=url, Entries=entries)
    finally:
        fidelity.uninstall()


def test_sqs_batch_of_more_than_ten_entries_is_refused(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    entries = [{"Id": str(i), "MessageBody": "x"} for i in range(11)]
    assert_limit(
        lambda: client.send_message_batch(QueueUrl=url, Entries=entries),
        "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        by_moto=True,
    )


def test_sqs_delete_and_visibility_batches_of_more_than_ten_entries_are_refused(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    handles = [{"Id": str(i), "ReceiptHandle": "h"} for i in range(11)]
    code = "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"
    error = refusal(lambda: client.delete_message_batch(QueueUrl=url, Entries=handles), hook=True)
    assert error is not None and error["Code"] == code, error
    alone = refusal(lambda: client.delete_message_batch(QueueUrl=url, Entries=handles), hook=False)
    assert alone is not None and alone["Code"] != code  # moto answers BatchEntryIdsNotDistinct
    visibility = [{**entry, "VisibilityTimeout": 1} for entry in handles]
    assert_limit(
        lambda: client.change_message_visibility_batch(QueueUrl=url, Entries=visibility), code, by_moto=False
    )


def test_sqs_delay_above_900_seconds_is_invalid(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    assert_limit(
        lambda: client.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=901),
        "InvalidParameterValue",
        by_moto=True,
    )
    client.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=900)


def test_sqs_negative_delay_is_invalid(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    assert_limit(
        lambda: client.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=-1),
        "InvalidParameterValue",
        by_moto=False,
    )


def test_sqs_batch_entry_with_a_bad_delay_fails_alone(sqs: tuple[Any, str]) -> None:
    client, url = sqs
    fidelity = AwsFidelity().install()
    try:
        got = client.send_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": "ok", "MessageBody": "x"},
                {"Id": "late", "MessageBody": "x", "DelaySeconds": 901},
                {"Id": "early", "MessageBody": "x", "DelaySeconds": -5},
            ],
        )
    finally:
        fidelity.uninstall()
    assert [entry["Id"] for entry in got["Successful"]] == ["ok"]
    assert {entry["Id"]: entry["Code"] for entry in got["Failed"]} == {
        "late": "InvalidParameterValue",
        "early": "InvalidParameterValue",
    }


# DynamoDB -------------------------------------------------------------------------------------------


def test_dynamodb_item_over_400_kb_is_refused(table: tuple[Any, str]) -> None:
    client, name = table
    big = {"id": {"S": "big"}, "v": {"S": "x" * (410 * KIB)}}
    assert_limit(lambda: client.put_item(TableName=name, Item=big), "ValidationException", by_moto=True)
    client.put_item(TableName=name, Item={"id": {"S": "small"}, "v": {"S": "x" * (390 * KIB)}})
    assert_limit(
        lambda: client.update_item(
            TableName=name,
            Key={"id": {"S": "small"}},
            UpdateExpression="SET w = :w",
            ExpressionAttributeValues={":w": {"S": "x" * (20 * KIB)}},
        ),
        "ValidationException",
        by_moto=True,
    )
    assert_limit(
        lambda: client.batch_write_item(RequestItems={name: [{"PutRequest": {"Item": big}}]}),
        "ValidationException",
        by_moto=True,
    )
    assert_limit(
        lambda: client.transact_write_items(TransactItems=[{"Put": {"TableName": name, "Item": big}}]),
        "ValidationException",
        by_moto=True,
    )


def test_dynamodb_transaction_of_more_than_100_items_is_refused(table: tuple[Any, str]) -> None:
    client, name = table
    items = [{"Put": {"TableName": name, "Item": {"id": {"S": str(i)}}}} for i in range(101)]
    assert_limit(
        lambda: client.transact_write_items(TransactItems=items), "ValidationException", by_moto=True
    )
    client.transact_write_items(TransactItems=items[:100])


def test_dynamodb_transaction_over_4_mb_is_refused(table: tuple[Any, str]) -> None:
    client, name = table
    items = [
        {"Put": {"TableName": name, "Item": {"id": {"S": str(i)}, "v": {"S": "x" * (390 * KIB)}}}}
        for i in range(11)
    ]  # 11 x 390 KiB = 4.19 MiB
    error = assert_limit(
        lambda: client.transact_write_items(TransactItems=items), "ValidationException", by_moto=False
    )
    assert "4 MB" in error["Message"]
    client.transact_write_items(TransactItems=items[:10])


def test_dynamodb_transaction_touching_one_item_twice_is_refused(table: tuple[Any, str]) -> None:
    client, name = table
    key = {"id": {"S": "a"}}
    items = [
        {"Put": {"TableName": name, "Item": key}},
        {
            "ConditionCheck": {
                "TableName": name,
                "Key": key,
                "ConditionExpression": "attribute_not_exists(id)",
            }
        },
    ]
    error = assert_limit(
        lambda: client.transact_write_items(TransactItems=items), "ValidationException", by_moto=True
    )
    assert "multiple operations on one item" in error["Message"]


def test_dynamodb_batch_write_of_more_than_25_requests_is_refused(table: tuple[Any, str]) -> None:
    client, name = table
    requests = [{"PutRequest": {"Item": {"id": {"S": str(i)}}}} for i in range(26)]
    assert_limit(
        lambda: client.batch_write_item(RequestItems={name: requests}), "ValidationException", by_moto=False
    )


def test_dynamodb_batch_write_with_one_key_twice_is_refused(table: tuple[Any, str]) -> None:
    client, name = table
    requests = [
        {"PutRequest": {"Item": {"id": {"S": "same"}, "v": {"N": "1"}}}},
        {"DeleteRequest": {"Key": {"id": {"S": "same"}}}},
    ]
    error = assert_limit(
        lambda: client.batch_write_item(RequestItems={name: requests}), "ValidationException", by_moto=False
    )
    assert "duplicates" in error["Message"]


def test_dynamodb_batch_get_with_one_key_twice_is_refused(table: tuple[Any, str]) -> None:
    client, name = table
    keys = [{"id": {"S": "same"}}, {"id": {"S": "same"}}]
    assert_limit(
        lambda: client.batch_get_item(RequestItems={name: {"Keys": keys}}),
        "ValidationException",
        by_moto=True,
    )


# SNS ------------------------------------------------------------------------------------------------


@pytest.fixture
def topic(aws: None) -> tuple[Any, str]:
    client = boto3.client("sns", region_name="us-east-1")
    return client, client.create_topic(Name="limits")["TopicArn"]


def test_sns_message_over_256_kib_in_utf8_bytes_is_invalid(topic: tuple[Any, str]) -> None:
    client, arn = topic
    assert_limit(
        lambda: client.publish(TopicArn=arn, Message="é" * (128 * KIB + 1)), "InvalidParameter", by_moto=False
    )
    assert_limit(
        lambda: client.publish(TopicArn=arn, Message="x" * (256 * KIB + 1)), "InvalidParameter", by_moto=True
    )


def test_sns_subject_with_a_line_break_is_invalid(topic: tuple[Any, str]) -> None:
    client, arn = topic
    assert_limit(
        lambda: client.publish(TopicArn=arn, Message="m", Subject="paused: nightly\nbackup"),
        "InvalidParameter",
        by_moto=False,
    )
    fidelity = AwsFidelity().install()
    try:
        with pytest.raises(client.exceptions.InvalidParameterException):
            client.publish(TopicArn=arn, Message="m", Subject="tab\there")
        client.publish(TopicArn=arn, Message="m", Subject="s" * 100)  # 100 characters pass, as in SNS
    finally:
        fidelity.uninstall()


# sizes as AWS counts them ----------------------------------------------------------------------------


def test_item_size_counts_names_and_values_as_dynamodb_does() -> None:
    assert limits.item_bytes({"ab": {"S": "é"}}) == 2 + 2
    assert limits.item_bytes({"n": {"N": "12345"}}) == 1 + 4  # (5 digits + 1) // 2 + 1
    assert limits.item_bytes({"b": {"BOOL": True}, "z": {"NULL": True}}) == 4
    assert limits.item_bytes({"m": {"M": {"k": {"S": "v"}}}}) == 1 + 3 + 1 + 1 + 1
    assert limits.item_bytes({"l": {"L": [{"S": "a"}, {"S": "b"}]}}) == 1 + 3 + 2 * (1 + 1)
    assert limits.item_bytes({"x": {"B": b"\x00\x01"}}) == 3


def test_message_size_counts_body_and_attributes_in_bytes() -> None:
    attributes = {"k": {"DataType": "String", "StringValue": "vé"}}
    assert limits.message_bytes("é", attributes) == 2 + 1 + 6 + 3


def test_malformed_parameters_are_left_to_moto_and_botocore() -> None:
    for params in ({"Entries": "no"}, {"Entries": [1, 2]}, {"MessageBody": 7}):
        assert limits.check("sqs", "SendMessageBatch", params) is None
    for params in ({"TransactItems": [{"Put": 1}]}, {"RequestItems": {"t": "no"}}, {"RequestItems": 3}):
        assert limits.check("dynamodb", "TransactWriteItems", params) is None
        assert limits.check("dynamodb", "BatchWriteItem", params) is None
    assert limits.check("lambda", "Invoke", {"Payload": "x" * 10**7}) is None
