"""The local stack's replacements for moto's hot paths answer exactly what moto's own code answers."""

from __future__ import annotations

import base64
import copy
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from moto.core import responses as moto_responses
from moto.core import serialize as moto_serialize
from moto.core import utils as moto_utils
from moto.dynamodb.parsing import validators as dynamodb_validators
from moto.dynamodb.parsing.ast_nodes import Node
from moto.dynamodb.parsing.expressions import UpdateExpressionParser
from moto.sqs import models as sqs_models

from edgecron_cli.local import moto_speedups


@pytest.fixture
def speedups() -> Iterator[None]:
    moto_speedups.install()
    yield
    moto_speedups.uninstall()


def _serialize_get_item(item: dict[str, Any]) -> Any:
    operation = moto_utils.get_service_model("dynamodb").operation_model("GetItem")
    serializer = moto_serialize.get_serializer_class("dynamodb", "json")(
        operation_model=operation, value_picker=moto_serialize.XFormedAttributePicker()
    )
    return json.loads(serializer.serialize({"Item": item})["body"])


def _random_value(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    kinds = ["S", "N", "SS", "NS", "BOOL", "NULL"] + (["M", "L"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "S":
        return {"S": rng.choice(["", "x", "ünïcode", "a b", "0", "true", "{}"])}
    if kind == "N":
        return {"N": rng.choice(["0", "-1", "3.25", "17958", "1E+3"])}
    if kind in ("SS", "NS"):
        return {kind: [str(rng.randint(0, 99)) for _ in range(rng.randint(1, 3))]}
    if kind == "BOOL":
        return {"BOOL": rng.random() < 0.5}
    if kind == "NULL":
        return {"NULL": True}
    if kind == "M":
        return {"M": {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randint(0, 3))}}
    return {"L": [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]}


def test_plain_attribute_values_serialize_as_moto_serializes_them() -> None:
    rng = random.Random(20261129)
    items = [{f"a{i}": _random_value(rng) for i in range(rng.randint(1, 8))} for _ in range(300)]
    generic = [_serialize_get_item(item) for item in items]
    moto_speedups.install()
    try:
        fast = [_serialize_get_item(item) for item in items]
        assert all(
            moto_speedups.plain_attribute_value(v) is not None for item in items for v in item.values()
        )
    finally:
        moto_speedups.uninstall()
    assert fast == generic


@pytest.mark.usefixtures("speedups")
def test_binary_values_are_left_to_moto() -> None:
    item = {"id": {"S": "a"}, "blob": {"B": b"\x00\xff"}, "nested": {"M": {"b": {"BS": [b"x"]}}}}
    assert moto_speedups.plain_attribute_value(item["blob"]) is None
    assert moto_speedups.plain_attribute_value(item["nested"]) is None
    body = _serialize_get_item(item)
    assert body["Item"]["blob"] == {"B": base64.b64encode(b"\x00\xff").decode()}
    assert body["Item"]["nested"] == {"M": {"b": {"BS": [base64.b64encode(b"x").decode()]}}}


def test_unexpected_python_types_are_left_to_moto() -> None:
    assert moto_speedups.plain_attribute_value({"N": 5}) is None
    assert moto_speedups.plain_attribute_value({"BOOL": "true"}) is None
    assert moto_speedups.plain_attribute_value({"XX": "1"}) is None
    assert moto_speedups.plain_attribute_value({}) is None
    assert moto_speedups.plain_attribute_value("S") is None


def _queue_with_message(retention_sec: int) -> tuple[Any, str, Any]:
    backend = sqs_models.SQSBackend("us-east-1", "000000000042")
    backend.create_queue("speedups", MessageRetentionPeriod=str(retention_sec))
    message = backend.send_message("speedups", "hello")
    return backend, "speedups", message


def test_retention_check_agrees_with_moto() -> None:
    backend, name, message = _queue_with_message(60)
    cases = [message.sent_timestamp, message.sent_timestamp - 59_000, message.sent_timestamp - 61_000]
    expected = []
    for sent in cases:
        message.sent_timestamp = sent
        expected.append(backend.is_message_valid_based_on_retention_period(name, message))
    assert expected == [True, True, False]
    moto_speedups.install()
    try:
        got = []
        for sent in cases:
            message.sent_timestamp = sent
            got.append(backend.is_message_valid_based_on_retention_period(name, message))
    finally:
        moto_speedups.uninstall()
    assert got == expected


@pytest.mark.usefixtures("speedups")
def test_the_sqs_clock_is_moto_clock() -> None:
    assert abs(sqs_models.unix_time() - moto_utils.unix_time()) < 0.05
    assert abs(sqs_models.unix_time_millis() - moto_utils.unix_time_millis()) < 50
    past = moto_utils.utcnow().replace(year=2020)
    assert sqs_models.unix_time(past) == moto_utils.unix_time(past)


def _tree(node: Any, parent: Any = None) -> Any:
    """A parse tree as plain data (node types, values, children), checking each child's parent link."""
    if not isinstance(node, Node):
        return repr(node)
    assert node.parent is parent
    fields = {k: _tree(v) for k, v in vars(node).items() if k not in ("children", "parent")}
    children = [_tree(child, node) for child in node.children or []]
    return type(node).__name__, fields, children


EXPRESSIONS = [
    "SET #s = :s, #n = :n ADD #c :one REMOVE #gone",
    "SET #0 = :2, #2 = :3, #3 = :4, #4 = :5 REMOVE #5, #6, #1, #7, #8, #9, #10",
    "SET a.b[2] = if_not_exists(a.b[2], :v) + :one, l = list_append(l, :items) DELETE ss :gone",
]


def test_update_expressions_parse_and_copy_to_the_same_trees() -> None:
    parsed = [UpdateExpressionParser.make(expression) for expression in EXPRESSIONS]
    copied = [copy.deepcopy(tree) for tree in parsed]
    moto_speedups.install()
    try:
        fast = [UpdateExpressionParser.make(expression) for expression in EXPRESSIONS]
        again = [UpdateExpressionParser.make(expression) for expression in EXPRESSIONS]
        fast_copies = [dynamodb_validators.deepcopy(tree) for tree in parsed]
        with pytest.raises(Exception) as first:
            UpdateExpressionParser.make("SET")
        with pytest.raises(type(first.value)):
            UpdateExpressionParser.make("SET")
    finally:
        moto_speedups.uninstall()
    for tree, fast_tree, again_tree, copy_tree, fast_copy in zip(
        parsed, fast, again, copied, fast_copies, strict=True
    ):
        assert _tree(fast_tree) == _tree(again_tree) == _tree(tree)
        assert fast_tree is not again_tree  # every parse is a tree of its own
        assert _tree(fast_copy) == _tree(copy_tree) == _tree(tree)


@pytest.mark.usefixtures("speedups")
def test_a_fresh_parse_is_its_validators_own_and_later_copies_are_the_parse_as_it_was() -> None:
    expected = _tree(copy.deepcopy(UpdateExpressionParser.make(EXPRESSIONS[0])))
    tree = UpdateExpressionParser.make(EXPRESSIONS[0])
    assert dynamodb_validators.deepcopy(tree) is tree  # the first copy: nobody else holds the tree
    tree.children[0].children = None  # what a validator does to its tree, in effect
    again = dynamodb_validators.deepcopy(tree)
    assert again is not tree and _tree(again) == expected
    assert dynamodb_validators.deepcopy(again) is not again  # a copy is not fresh from the parse
    assert _tree(dynamodb_validators.deepcopy(again)) == expected


@pytest.mark.usefixtures("speedups")
def test_updates_apply_with_the_cached_parse() -> None:
    from moto.dynamodb.models import DynamoDBBackend

    backend = DynamoDBBackend("us-east-1", "000000000042")
    _keyed_table(backend, "speedups", "S", None, hash_name="id")
    expression = EXPRESSIONS[0]
    names = {"#s": "status", "#n": "note", "#c": "count", "#gone": "gone"}
    for run, status in enumerate(["pending", "running", "success"], start=1):
        item = backend.update_item(
            "speedups",
            {"id": {"S": "a"}},
            expression,
            names,
            {":s": {"S": status}, ":n": {"S": f"run {run}"}, ":one": {"N": "1"}},
        )
        attrs = item.to_json()["Attributes"]
        assert attrs["status"] == {"S": status} and attrs["count"] == {"N": str(run)}
        assert "gone" not in attrs


def test_method_names_are_listed_once_per_class() -> None:
    from moto.dynamodb.responses import DynamoHandler

    expected = moto_utils.method_names_from_class(DynamoHandler)
    moto_speedups.install()
    try:
        first = moto_responses.method_names_from_class(DynamoHandler)
        first.append("mutated by a caller")
        assert moto_responses.method_names_from_class(DynamoHandler) == expected
    finally:
        moto_speedups.uninstall()


def test_uninstall_puts_moto_back() -> None:
    generic = moto_serialize.BaseJSONSerializer.__dict__["_serialize_type_structure"]
    retention = sqs_models.SQSBackend.__dict__["is_message_valid_based_on_retention_period"]
    make = UpdateExpressionParser.__dict__["make"]
    moto_speedups.install()
    moto_speedups.install()  # idempotent
    assert moto_speedups.installed()
    assert moto_serialize.BaseJSONSerializer.__dict__["_serialize_type_structure"] is not generic
    moto_speedups.uninstall()
    assert not moto_speedups.installed()
    assert moto_serialize.BaseJSONSerializer.__dict__["_serialize_type_structure"] is generic
    assert sqs_models.SQSBackend.__dict__["is_message_valid_based_on_retention_period"] is retention
    assert UpdateExpressionParser.__dict__["make"] is make
    assert sqs_models.unix_time is moto_utils.unix_time
    assert dynamodb_validators.deepcopy is copy.deepcopy
    assert moto_responses.method_names_from_class is moto_utils.method_names_from_class


def _table_backend(account: str) -> Any:
    from moto.dynamodb.models import DynamoDBBackend

    backend = DynamoDBBackend("us-east-1", account)
    _keyed_table(backend, "walk", "S", None, hash_name="id")
    return backend


UPDATES: list[tuple[str, dict[str, str], dict[str, Any]]] = [
    (
        "SET #s = :s, #n = :n ADD #c :one REMOVE #gone",
        {"#s": "status", "#n": "note", "#c": "count", "#gone": "g"},
        {":s": {"S": "pending"}, ":n": {"S": "x"}, ":one": {"N": "1"}},
    ),
    (
        "SET l = list_append(if_not_exists(l, :empty), :items), m = :m",
        {},
        {":empty": {"L": []}, ":items": {"L": [{"S": "a"}]}, ":m": {"M": {"k": {"N": "2"}}}},
    ),
    (
        "SET m.k = m.k + :one, tally = if_not_exists(tally, :zero) - :one",
        {},
        {":one": {"N": "1"}, ":zero": {"N": "0"}},
    ),
    (
        "SET l = list_append(l, :items) DELETE ss :gone",
        {},
        {":items": {"L": [{"S": "b"}]}, ":gone": {"SS": ["z"]}},
    ),
    ("SET #k = :s", {"#k": "id"}, {":s": {"S": "other"}}),  # a key attribute: refused
    ("SET nested.deeper = :s", {}, {":s": {"S": "v"}}),  # a path that does not exist: refused
    ("SET #s = :missing", {"#s": "status"}, {}),  # an undefined value: refused
    ("ADD ss :add SET #s = :s", {"#s": "status"}, {":add": {"SS": ["y", "z"]}, ":s": {"S": "done"}}),
    # the shape of an expression that passed, with names that make it update the key: refused
    (
        "SET #s = :s, #n = :n ADD #c :one REMOVE #gone",
        {"#s": "id", "#n": "note", "#c": "count", "#gone": "g"},
        {":s": {"S": "b"}, ":n": {"S": "x"}, ":one": {"N": "1"}},
    ),
    ("SET #a = :s, #b = :s", {"#a": "p", "#b": "p"}, {":s": {"S": "v"}}),  # overlapping paths: refused
]


def _apply_updates(backend: Any) -> list[Any]:
    """Each update twice: the second time the shape checks an expression passed are skipped."""
    outcomes: list[Any] = []
    for expression, names, values in UPDATES + UPDATES:
        try:
            item = backend.update_item("walk", {"id": {"S": "a"}}, expression, names, values)
            outcomes.append(item.to_json()["Attributes"])
        except Exception as exc:
            outcomes.append((type(exc).__name__, str(exc)))
    return outcomes


def test_update_validation_walk_gives_moto_results_and_errors() -> None:
    expected = _apply_updates(_table_backend("000000000043"))
    moto_speedups.install()
    try:
        got = _apply_updates(_table_backend("000000000044"))
    finally:
        moto_speedups.uninstall()
    assert got == expected
    assert sum(isinstance(outcome, tuple) for outcome in expected) == 10  # the refusals are compared too


CONDITIONS: list[tuple[str, dict[str, str]]] = [
    ("#s = :s", {"#s": "status"}),
    (
        "(#s IN (:a, :b) OR (#s = :r AND #c < :now)) AND attribute_exists(#id)",
        {"#s": "status", "#c": "claim", "#id": "id"},
    ),
    (
        "attribute_not_exists(id) OR NOT (size(#l) >= :n) AND begins_with(#p, :prefix)",
        {"#l": "list", "#p": "path"},
    ),
    (
        "#n BETWEEN :low AND :high AND attribute_type(#n, :type) AND contains(#l, :s)",
        {"#n": "count", "#l": "list"},
    ),
    ("m.k[1] <> :s", {}),
]


def _evaluate(op: Any, item: Any) -> Any:
    try:
        return op.expr(item)
    except Exception as exc:
        return type(exc).__name__, str(exc)


def _condition_outcomes(rng: random.Random) -> list[Any]:
    """Each condition with three sets of values, each evaluated against a few items; then the refusals."""
    from moto.dynamodb.comparisons import ConditionExpressionParser
    from moto.dynamodb.models.dynamo_type import Item

    items = [
        Item({"S": "a"}, None, {"id": {"S": "a"}}),
        Item(
            {"S": "b"},
            None,
            {
                "id": {"S": "b"},
                "status": {"S": "running"},
                "claim": {"N": "5"},
                "count": {"N": "3"},
                "list": {"L": [{"S": "x"}, {"S": "y"}]},
                "path": {"S": "/v1/x"},
                "m": {"M": {"k": {"L": [{"S": "p"}, {"S": "q"}]}}},
            },
        ),
    ]
    outcomes: list[Any] = []
    for expression, names in CONDITIONS:
        for _ in range(3):
            values = {
                ":s": {"S": rng.choice(["running", "q", "x"])},
                ":a": {"S": "pending"},
                ":b": {"S": rng.choice(["running", "retrying"])},
                ":r": {"S": "running"},
                ":now": {"N": str(rng.randint(0, 9))},
                ":n": {"N": str(rng.randint(0, 3))},
                ":prefix": {"S": rng.choice(["/v1", "/v2"])},
                ":low": {"N": str(rng.randint(0, 4))},
                ":high": {"N": str(rng.randint(3, 6))},
                ":type": {"S": rng.choice(["N", "S"])},
            }
            parser = ConditionExpressionParser(expression, names, values)
            op = parser.parse()
            outcomes.append(
                (
                    [_evaluate(op, item) for item in items],
                    parser.expr_attr_names_found,
                    parser.expr_attr_values_found,
                )
            )
    for expression, names, values in [
        ("#s = :missing", {"#s": "status"}, {}),
        ("#s = :s", {}, {":s": {"S": "x"}}),
        ("#s = = :s", {"#s": "status"}, {":s": {"S": "x"}}),
        ("((#s = :s))", {"#s": "status"}, {":s": {"S": "x"}}),
    ]:
        for _ in range(2):  # a refusal is refused again, not kept
            try:
                ConditionExpressionParser(expression, names, values).parse()
                outcomes.append("accepted")
            except Exception as exc:
                outcomes.append((type(exc).__name__, str(exc)))
    return outcomes


def test_kept_condition_trees_evaluate_each_calls_values_as_moto_does() -> None:
    expected = _condition_outcomes(random.Random(3))
    moto_speedups.install()
    try:
        got = _condition_outcomes(random.Random(3))
    finally:
        moto_speedups.uninstall()
    assert got == expected
    assert len({str(outcome[0]) for outcome in expected if isinstance(outcome, tuple)}) > 3


def _keyed_table(
    backend: Any, name: str, hash_type: str, range_type: str | None, hash_name: str = "h"
) -> Any:
    """A table in `backend` keyed by `hash_name` (and `r`, when `range_type` is given)."""
    schema = [{"AttributeName": hash_name, "KeyType": "HASH"}]
    attr = [{"AttributeName": hash_name, "AttributeType": hash_type}]
    if range_type is not None:
        schema.append({"AttributeName": "r", "KeyType": "RANGE"})
        attr.append({"AttributeName": "r", "AttributeType": range_type})
    return backend.create_table(
        name,
        schema=schema,
        throughput=None,
        attr=attr,
        global_indexes=None,
        indexes=None,
        streams=None,
        billing_mode="PAY_PER_REQUEST",
        sse_specification=None,
        tags=[],
        deletion_protection_enabled=False,
        warm_throughput=None,
    )


def _key_value(rng: random.Random, kind: str) -> dict[str, str]:
    if kind == "N":
        return {
            "N": rng.choice(["0", "-1", "3.25", "10", "9", "1E+3", "100", "-0.5", str(rng.randint(-99, 99))])
        }
    return {"S": rng.choice(["", "a", "B", "b#1", "b#10", "b#9", "ü", str(rng.randint(0, 99))])}


def test_table_walks_list_items_in_moto_order() -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    rng = random.Random(20261202)
    backend = DynamoDBBackend("us-east-1", "123456789012")
    moto_all_items = Table.__dict__["all_items"]
    shapes = [("S", None), ("N", None), ("S", "S"), ("S", "N"), ("N", "S"), ("N", "N")]
    for number, (hash_type, range_type) in enumerate(shapes):
        table = _keyed_table(backend, f"walk{number}", hash_type, range_type)
        for _ in range(300):
            item = {"h": _key_value(rng, hash_type), "v": {"N": str(rng.randint(0, 9))}}
            if range_type is not None:
                item["r"] = _key_value(rng, range_type)
            backend.put_item(table.name, item)
        moto_order = [(i.hash_key, i.range_key) for i in Table.all_items(table)]
        moto_speedups.install()
        try:
            assert Table.__dict__["all_items"] is not moto_all_items  # the faster walk is in place
            fast_order = [(i.hash_key, i.range_key) for i in table.all_items()]
        finally:
            moto_speedups.uninstall()
        assert fast_order == moto_order
    assert Table.__dict__["all_items"] is moto_all_items
