"""moto's side of the local stack, in this process: the snapshot reads give what moto itself serializes."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.utilities import dynamo_json_dump

from edgecron_cli.local import moto_server
from edgecron_cli.local.intrinsics import REGION
from edgecron_testing.tables import id_table


@pytest.fixture
def ddb() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("dynamodb", region_name=REGION)


def _random_value(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    kinds = ["S", "N", "B", "SS", "NS", "BS", "BOOL", "NULL"] + (["M", "L"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind in ("S", "N"):
        return {kind: rng.choice(["0", "-1.5", "ünï", "a b"]) if kind == "S" else str(rng.randint(-9, 99))}
    if kind == "B":
        return {"B": rng.randbytes(rng.randint(1, 5))}
    if kind in ("SS", "NS"):
        return {kind: sorted({str(rng.randint(0, 99)) for _ in range(rng.randint(1, 3))})}
    if kind == "BS":
        return {"BS": list({rng.randbytes(3) for _ in range(rng.randint(1, 3))})}
    if kind == "BOOL":
        return {"BOOL": rng.random() < 0.5}
    if kind == "NULL":
        return {"NULL": True}
    if kind == "M":
        return {"M": {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randint(0, 3))}}
    return {"L": [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]}


def test_snapshot_reads_give_what_moto_serializes(ddb: Any) -> None:
    table = id_table(ddb)
    rng = random.Random(7)
    for i in range(60):
        item = {f"a{j}": _random_value(rng) for j in range(rng.randint(0, 6))}
        ddb.put_item(TableName=table, Item={"id": {"S": str(i)}, **item})
    moto_table = dynamodb_backends["123456789012"][REGION].get_table(table)
    expected = json.loads(dynamo_json_dump([i.to_json()["Attributes"] for i in moto_table.all_items()]))
    assert moto_server.table_items(table) == expected
    text = json.dumps(expected)
    assert '"B": ' in text and '"BS": ' in text and '"M": {"k0": {"B": ' in text  # binary, nested too
