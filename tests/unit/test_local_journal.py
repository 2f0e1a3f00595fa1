"""The local stack's journal, for real: a moto process writing it, another replaying it onto the last
snapshot; what the second holds is what the first held when it stopped, whatever the mix of writes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from edgecron_cli.local import journal
from edgecron_cli.local.intrinsics import REGION
from edgecron_cli.local.moto_process import MotoProcess

PAIRS = "pairs"  # hash and range key
IDS = "ids"  # hash key only


@contextmanager
def moto_with(journal_dir: Path) -> Iterator[MotoProcess]:
    process = MotoProcess(0, journal=str(journal_dir))
    process.start()
    process.serve_botocore()
    try:
        yield process
    finally:
        process.stop()


def client(process: MotoProcess, *, over_http: bool = False) -> Any:
    ddb = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    ).client("dynamodb", endpoint_url=process.endpoint_url, config=Config(retries={"max_attempts": 1}))
    if over_http:
        ddb.meta.events.unregister("before-send", process.transport)
    return ddb


def create_tables(ddb: Any) -> None:
    ddb.create_table(
        TableName=PAIRS,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    ddb.create_table(
        TableName=IDS,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def state(process: MotoProcess) -> dict[str, list[dict[str, Any]]]:
    return {
        table: sorted(process.table_items(table), key=lambda item: sorted(item.items()).__repr__())
        for table in (PAIRS, IDS)
    }


def random_write(ddb: Any, rng: random.Random) -> None:
    """One write of any kind the handlers make; some are refused (a failed condition, a cancelled
    transaction) and change nothing."""
    pair = {"pk": {"S": f"p{rng.randint(0, 3)}"}, "sk": {"N": str(rng.randint(0, 3))}}
    one = {"id": {"S": f"i{rng.randint(0, 5)}"}}
    kind = rng.choice(["put", "add", "delete", "conditional", "batch", "transact", "cancelled"])
    try:
        if kind == "put":
            ddb.put_item(TableName=PAIRS, Item={**pair, "v": {"S": str(rng.random())}})
        elif kind == "add":  # not idempotent as a request: replayed twice it would count twice
            ddb.update_item(
                TableName=IDS,
                Key=one,
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
        elif kind == "delete":
            ddb.delete_item(TableName=rng.choice([PAIRS, IDS]), Key=rng.choice([pair, one]))
        elif kind == "conditional":
            ddb.put_item(
                TableName=IDS,
                Item={**one, "c": {"BOOL": True}},
                ConditionExpression="attribute_not_exists(id)",
            )
        elif kind == "batch":
            ddb.batch_write_item(
                RequestItems={
                    PAIRS: [{"PutRequest": {"Item": {**pair, "b": {"B": rng.randbytes(3)}}}}],
                    IDS: [{"DeleteRequest": {"Key": one}}],
                }
            )
        else:
            ddb.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": PAIRS, "Item": {**pair, "t": {"SS": ["x", "y"]}}}},
                    {
                        "Update": {
                            "TableName": IDS,
                            "Key": one,
                            "UpdateExpression": "ADD n :one",
                            "ExpressionAttributeValues": {":one": {"N": "10"}},
                            **(
                                {"ConditionExpression": "attribute_exists(nope)"}
                                if kind == "cancelled"
                                else {}
                            ),
                        }
                    },
                ]
            )
    except ClientError as exc:
        assert exc.response["Error"]["Code"] in (
            "ConditionalCheckFailedException",
            "TransactionCanceledException",
            "ValidationException",
        ), exc.response


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_replay_onto_the_last_snapshot_gives_what_moto_held(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    journal_dir = tmp_path / "journal"
    with moto_with(journal_dir) as first:
        socket_ddb, http_ddb = client(first), client(first, over_http=True)
        create_tables(socket_ddb)
        snapshot = state(first)
        for step in range(300):
            random_write(rng.choice([socket_ddb, http_ddb]), rng)
            if step in (100, 200):  # a snapshot compacts the journal, as the stack's does
                segment = first.rotate_journal()
                assert segment is not None
                for _ in range(rng.randint(0, 5)):  # writes while the snapshot is read
                    random_write(socket_ddb, rng)
                snapshot = state(first)
                journal.discard_before(journal_dir, segment)
        held = state(first)
    assert held[PAIRS] and held[IDS]

    with moto_with(journal_dir) as second:
        create_tables(client(second))
        for table, items in snapshot.items():
            second.put_items(table, items)
        assert second.replay_journal() > 0
        assert state(second) == held


def test_a_line_cut_short_ends_its_segment(tmp_path: Path) -> None:
    written = journal.Journal(tmp_path)
    written.append([("t", {"id": {"S": "a"}}, {"id": {"S": "a"}}), ("t", {"id": {"S": "b"}}, None)])
    number = written.rotate()
    written.close()
    (tmp_path / f"{number - 1:06d}.jsonl").open("a").write('{"t": "t", "k": {"id"')
    assert journal.read_images(tmp_path, before=number) == [
        ("t", {"id": {"S": "a"}}, {"id": {"S": "a"}}),
        ("t", {"id": {"S": "b"}}, None),
    ]
    assert journal.discard_before(tmp_path, number) == 1
    assert [found for found, _ in journal.segments(tmp_path)] == [number]
