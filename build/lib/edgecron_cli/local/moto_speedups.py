"""Faster versions of a few of moto's hot paths, installed in the local stack's moto process only.

Under load, the local stack spent most of its CPU (one core, because of the GIL) in a handful of moto
functions whose cost has nothing to do with what they compute. Each replacement here gives the same
answers as moto's own code (tests/unit/test_local_moto_speedups.py compares them) and is skipped
when moto no longer has what it replaces:

- SQS, every received message: `is_message_valid_based_on_retention_period` builds *all* the queue's
  attributes to read one, and three of them count the queue's messages, each message asking the clock
  twice. A receive cost O(batch x queue size) clock reads: 48 ms on a queue holding a few hundred
  delayed fires. It now reads the retention period directly.
- SQS clock: moto's `unix_time()` builds two datetimes per call, and `Message.visible`/`.delayed`
  call it for every message of the queue on every receive. In the stack's process nothing freezes
  time, so `time.time()` gives the same value.
- DynamoDB responses: moto's generic serializer resolves each member of each attribute value through
  several alias providers (about ten lookups per attribute, per item, per response), a quarter of the
  stack's CPU while schedules fire. An attribute value that is already plain DynamoDB JSON (no binary
  in it) is copied as it is, which is what the serializer would have written.
- DynamoDB UpdateItem parses its UpdateExpression twice per call, and its validator deep-copies the
  tree (`copy.deepcopy`, about 0.6 ms for EdgeCron's expressions). Each expression is now parsed once
  and kept pickled (the same few expressions come back all the time): every parse returns a fresh
  tree unpickled from it, and the validator copies the tree with a pickle round trip. Same trees, a
  fifth of the time. A tree fresh from that cache belongs to nobody else, so the validator's first
  copy of it is the tree itself, and any later copy is unpickled from the parse it came from (the
  validator changes its tree as it goes): one round trip less per UpdateItem, about 5 % of the
  stack's CPU under load.
- Every moto call lists the methods of its response class with `inspect.getmembers`; the list of a
  class is now computed once.
- DynamoDB UpdateItem validates its tree with ten processors, each walking the whole tree and
  building its `_processing_map()` dict and the tuple of node types twice for every node (the
  largest part of an UpdateItem's CPU). Each walk now builds them once; the nodes are visited and
  processed in the same order, with the same processors. Three of the ten only check the
  expression's shape (one clause of each kind, no overlapping paths, no key attribute updated),
  which depends on the expression, its attribute names and the table's keys alone: once an
  expression has passed them with those names on that table, they are not run for it again.
- DynamoDB ConditionExpressions (every conditional write, twice per UpdateItem) are lexed and parsed
  on every call, about 1-2 ms each. The syntax tree depends on the expression and its attribute names
  only (values are looked up by placeholder, and only the operands hold them), so the tree is kept per
  expression and names, and each call builds its conditions from it with the call's own values. A
  placeholder the call does not define goes to moto's parse, which refuses it as before.
- DynamoDB Query on an index and Scan start from `Table.all_items()`, which sorts every item of the
  table by its keys, comparing `DynamoType`s: each comparison converts both values again (a `Decimal`
  per number key), so a query of an index on a table of 10,000 items cost about 4 s. The items are now
  sorted by their keys' values converted once per item: the same order, since a table's key
  attributes have one type each.
"""

from __future__ import annotations

import copy
import datetime
import functools
import pickle
import time
import weakref
from typing import Any

from moto.core import responses as moto_responses
from moto.core import serialize as moto_serialize
from moto.core import utils as moto_utils
from moto.dynamodb import comparisons as dynamodb_comparisons
from moto.dynamodb.models import table as dynamodb_table
from moto.dynamodb.parsing import ast_nodes as dynamodb_ast
from moto.dynamodb.parsing import expressions as dynamodb_expressions
from moto.dynamodb.parsing import validators as dynamodb_validators
from moto.sqs import models as sqs_models

_PLAIN_SCALARS = frozenset({"S", "N"})
_PLAIN_SETS = frozenset({"SS", "NS"})
_PLAIN_FLAGS = frozenset({"NULL", "BOOL"})

# (owner, attribute, moto's original value) of every replacement in place, for `uninstall`
_replaced: list[tuple[Any, str, Any]] = []


def install() -> None:
    """Install the speed-ups (idempotent). Only for a process that runs moto for the local stack."""
    if _replaced:
        return
    _install_sqs()
    _install_dynamodb_serializer()
    _install_update_expression_cache()
    _install_update_expression_copy()
    _install_method_names_cache()
    _install_tree_walk()
    _install_shape_checks_cache()
    _install_condition_cache()
    _install_all_items_sort()


def uninstall() -> None:
    """Put moto's own code back (tests)."""
    while _replaced:
        owner, name, original = _replaced.pop()
        setattr(owner, name, original)


def installed() -> bool:
    return bool(_replaced)


def _replace(owner: Any, name: str, value: Any) -> None:
    _replaced.append((owner, name, owner.__dict__[name]))
    setattr(owner, name, value)


# SQS -------------------------------------------------------------------------------------------------

_moto_unix_time = moto_utils.unix_time
_moto_unix_time_millis = moto_utils.unix_time_millis


def _unix_time(dt: datetime.datetime | None = None) -> float:
    return time.time() if dt is None else _moto_unix_time(dt)


def _unix_time_millis(dt: datetime.datetime | None = None) -> float:
    return time.time() * 1000.0 if dt is None else _moto_unix_time_millis(dt)


def _is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
    retention_period = int(self.get_queue(queue_name).message_retention_period)
    return bool(retention_period + message.sent_timestamp / 1000 > _unix_time())


def _install_sqs() -> None:
    backend = sqs_models.SQSBackend
    if "is_message_valid_based_on_retention_period" in backend.__dict__:
        _replace(
            backend, "is_message_valid_based_on_retention_period", _is_message_valid_based_on_retention_period
        )
    if sqs_models.__dict__.get("unix_time") is _moto_unix_time:
        _replace(sqs_models, "unix_time", _unix_time)
    if sqs_models.__dict__.get("unix_time_millis") is _moto_unix_time_millis:
        _replace(sqs_models, "unix_time_millis", _unix_time_millis)


# DynamoDB serializer ---------------------------------------------------------------------------------


def plain_attribute_value(value: Any) -> dict[str, Any] | None:
    """`value` as moto's JSON serializer writes an AttributeValue, or None when it is not plain
    DynamoDB JSON (binary, an unknown type, an unexpected Python type): moto serializes that itself."""
    if type(value) is not dict or not value:
        return None
    out: dict[str, Any] = {}
    for kind, inner in value.items():
        if inner is None:
            continue  # the serializer leaves None members out
        if kind in _PLAIN_SCALARS:
            if type(inner) is not str:
                return None
            out[kind] = inner
        elif kind in _PLAIN_SETS:
            if type(inner) is not list or any(type(member) is not str for member in inner):
                return None
            out[kind] = list(inner)
        elif kind in _PLAIN_FLAGS:
            if type(inner) is not bool:
                return None
            out[kind] = inner
        elif kind == "M":
            if type(inner) is not dict or any(type(name) is not str for name in inner):
                return None
            members: dict[str, Any] = {}
            for name, member in inner.items():
                plain = plain_attribute_value(member)
                if plain is None:
                    return None
                members[name] = plain
            out[kind] = members
        elif kind == "L":
            if type(inner) is not list:
                return None
            items = []
            for member in inner:
                plain = plain_attribute_value(member)
                if plain is None:
                    return None
                items.append(plain)
            out[kind] = items
        else:
            return None
    return out


def _install_dynamodb_serializer() -> None:
    serializer = moto_serialize.BaseJSONSerializer
    generic = serializer.__dict__.get("_serialize_type_structure")
    if generic is None:
        return

    def _serialize_type_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if (
            key
            and shape.name == "AttributeValue"
            and self.service_model.service_name == "dynamodb"
            and not getattr(self._value_picker, "response_transformers", None)
        ):
            plain = plain_attribute_value(value)
            if plain is not None:
                serialized[self.get_serialized_name(shape, key)] = plain
                return
        generic(self, serialized, value, shape, key)

    _replace(serializer, "_serialize_type_structure", _serialize_type_structure)


# DynamoDB UpdateExpression parse and copy ----------------------------------------------------------


# The UpdateExpression each tree parsed from the cache (and each validator's copy of it) came from.
_expression_of: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
# A tree unpickled from the cache -> its pickle, and whether a copy of it was handed out yet.
_made_from: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()


def _pickled(tree: Any) -> bytes | None:
    try:
        return pickle.dumps(tree, pickle.HIGHEST_PROTOCOL)
    except Exception:  # a tree pickle cannot copy is copied the way moto does
        return None


def _install_update_expression_cache() -> None:
    parser: Any = getattr(dynamodb_expressions, "UpdateExpressionParser", None)
    make = parser.__dict__.get("make") if parser is not None else None
    if not isinstance(make, classmethod):
        return
    parse = make.__func__

    @functools.lru_cache(maxsize=1024)
    def parsed(expression: str) -> bytes | None:
        return _pickled(parse(parser, expression))

    def cached_make(cls: Any, expression: Any) -> Any:
        if cls is parser and isinstance(expression, str):
            blob = parsed(expression)  # a syntax error raises here, and is not cached
            if blob is not None:
                tree = pickle.loads(blob)  # noqa: S301 - our own pickle of moto's parse tree
                _expression_of[tree] = expression
                _made_from[tree] = [blob, False]
                return tree
        return parse(cls, expression)

    _replace(parser, "make", classmethod(cached_make))


def _install_update_expression_copy() -> None:
    tree_type = getattr(dynamodb_ast, "UpdateExpression", None)
    if tree_type is None or dynamodb_validators.__dict__.get("deepcopy") is not copy.deepcopy:
        return

    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        if memo is None and type(value) is tree_type:
            source = _made_from.get(value)
            if source is not None:
                blob, handed_out = source
                if not handed_out:  # nobody else holds it: the validator may have it as it is
                    source[1] = True
                    return value
                copied = pickle.loads(blob)  # noqa: S301 - the tree as parsed, before any change
                _expression_of[copied] = _expression_of[value]
                return copied
            blob = _pickled(value)
            if blob is not None:
                copied = pickle.loads(blob)  # noqa: S301 - our own pickle of moto's parse tree
                if value in _expression_of:
                    _expression_of[copied] = _expression_of[value]
                return copied
        return copy.deepcopy(value, memo)

    _replace(dynamodb_validators, "deepcopy", deepcopy)


# moto's dispatch -------------------------------------------------------------------------------------


def _install_method_names_cache() -> None:
    method_names = moto_responses.__dict__.get("method_names_from_class")
    if method_names is not moto_utils.method_names_from_class:
        return
    names_of = functools.lru_cache(maxsize=None)(method_names)

    def method_names_from_class(clazz: object) -> list[str]:
        return list(names_of(clazz))

    _replace(moto_responses, "method_names_from_class", method_names_from_class)


# DynamoDB update validation walk ---------------------------------------------------------------------


def _install_tree_walk() -> None:
    traverser: Any = getattr(dynamodb_ast, "DepthFirstTraverser", None)
    node_type: Any = getattr(dynamodb_ast, "Node", None)
    if traverser is None or node_type is None:
        return
    own = traverser.__dict__
    names = (
        "traverse",
        "traverse_node_recursively",
        "process",
        "nodes_to_be_processed",
        "pre_processing_of_child",
    )
    if any(name not in own for name in names):
        return
    moto_traverse = own["traverse"]
    moto_methods = {name: own[name] for name in names[1:]}
    no_pre = own["pre_processing_of_child"]

    def traverse(self: Any, node: Any) -> Any:
        cls = type(self)
        if any(
            getattr(cls, name) is not method
            for name, method in moto_methods.items()
            if name != "pre_processing_of_child"
        ):
            return moto_traverse(self, node)  # a processor that walks its own way
        processors = list(self._processing_map().items())
        kinds = tuple(kind for kind, _ in processors)
        pre = None if cls.pre_processing_of_child is no_pre else self.pre_processing_of_child

        def walk(node: Any, child_id: int) -> Any:
            if isinstance(node, node_type):
                parent = node.parent
                if node.children is not None:
                    for i, child in enumerate(node.children):
                        if pre is not None:
                            pre(node, i)
                        walk(child, i)
                if isinstance(node, kinds):
                    node = next(process for kind, process in processors if isinstance(node, kind))(node)
                    node.parent = parent
                    if parent:
                        parent.children[child_id] = node
            return node

        return walk(node, -1)

    _replace(traverser, "traverse", traverse)


_SHAPE_CHECKS = ("ActionCountValidator", "OverlappingPathsValidator", "UpdateHashRangeKeyValidator")
_passed_shapes: set[tuple[Any, ...]] = set()


def _shape_key(validator: Any) -> tuple[Any, ...] | None:
    expression = _expression_of.get(validator.node_to_validate)
    if expression is None:
        return None
    names = validator.expression_attribute_names or {}
    table = validator.table
    return expression, tuple(sorted(names.items())), table.name, tuple(table.table_key_attrs)


def _install_shape_checks_cache() -> None:
    validator_type: Any = getattr(dynamodb_validators, "UpdateExpressionValidator", None)
    base: Any = getattr(dynamodb_validators, "Validator", None)
    checks = tuple(getattr(dynamodb_validators, name, None) for name in _SHAPE_CHECKS)
    if validator_type is None or base is None or None in checks or "validate" not in base.__dict__:
        return
    moto_validate = base.__dict__["validate"]

    def validate(self: Any) -> Any:
        key = _shape_key(self) if type(self) is validator_type else None
        if key is not None and key in _passed_shapes:
            self.processors = [p for p in self.processors if type(p) not in checks]
        validated = moto_validate(self)
        if key is not None and len(_passed_shapes) < 4096:
            _passed_shapes.add(key)  # every processor passed (a failure raised above)
        return validated

    _replace(base, "validate", validate)


# DynamoDB ConditionExpression parse ------------------------------------------------------------------

_CONDITION_STEPS = (
    "_lex_condition_expression",
    "_parse_paths",
    "_apply_functions",
    "_apply_comparator",
    "_apply_in",
    "_apply_between",
    "_apply_parens_and_booleans",
    "_assert_no_redundant_parentheses",
    "_find_literals",
    "_find_expr_attr_values",
    "_make_op_condition",
    "_make_operand",
)
_CONDITION_CACHE_SIZE = 1024


def _install_condition_cache() -> None:
    parser: Any = getattr(dynamodb_comparisons, "ConditionExpressionParser", None)
    value_type: Any = getattr(dynamodb_comparisons, "AttributeValue", None)
    if parser is None or value_type is None or "parse" not in parser.__dict__:
        return
    if any(not hasattr(parser, step) for step in _CONDITION_STEPS) or "_make_operand" not in parser.__dict__:
        return
    moto_parse = parser.__dict__["parse"]
    moto_make_operand = parser.__dict__["_make_operand"]
    value_kind = parser.Kind.EXPRESSION_ATTRIBUTE_VALUE
    trees: dict[tuple[Any, ...], tuple[Any, list[str], list[str]]] = {}

    def syntax_tree(self: Any) -> Any:
        """moto 5.2.5's `parse` up to its conditions, in the same order."""
        nodes = self._lex_condition_expression()
        nodes = self._parse_paths(nodes)
        nodes = self._apply_functions(nodes)
        nodes = self._apply_comparator(nodes)
        nodes = self._apply_in(nodes)
        nodes = self._apply_between(nodes)
        nodes = self._apply_parens_and_booleans(nodes)
        node = nodes[0]
        self._assert_no_redundant_parentheses(node)
        return node

    def parse(self: Any) -> Any:
        expression = self.condition_expression
        names = self.expression_attribute_names or {}
        if type(self) is not parser or not isinstance(expression, str) or not expression:
            return moto_parse(self)
        try:
            key = (expression, tuple(sorted(names.items())))
            hash(key)
        except TypeError:
            return moto_parse(self)
        cached = trees.get(key)
        if cached is None:
            node = syntax_tree(self)  # an invalid expression raises here, and is not kept
            cached = (node, self._find_literals(node), self._find_expr_attr_values(node))
            if len(trees) < _CONDITION_CACHE_SIZE:
                trees[key] = cached
        node, names_found, values_found = cached
        values = self.expression_attribute_values or {}
        if any(placeholder not in values for placeholder in values_found):
            return moto_parse(self)  # refused as moto refuses it
        self.expr_attr_names_found.extend(names_found)
        self.expr_attr_values_found.extend(values_found)
        return self._make_op_condition(node)

    def make_operand(self: Any, node: Any) -> Any:
        if node.kind == value_kind:  # this call's value, not the one the kept tree was parsed with
            return value_type(self.expression_attribute_values[node.text])
        return moto_make_operand(self, node)

    _replace(parser, "parse", parse)
    _replace(parser, "_make_operand", make_operand)


# DynamoDB table walk ---------------------------------------------------------------------------------


def _all_items(self: Any) -> list[Any]:
    """moto 5.2.5's `Table.all_items`, each item's key values converted once instead of per comparison."""
    items: list[Any] = []
    for hash_set in self.items.values():
        if self.range_key_attr:
            items.extend(hash_set.values())
        else:
            items.append(hash_set)
    return sorted(
        items,
        key=lambda x: (
            (x.hash_key.cast_value, x.range_key.cast_value) if x.range_key else x.hash_key.cast_value
        ),
    )


def _install_all_items_sort() -> None:
    table = getattr(dynamodb_table, "Table", None)
    if table is None or "all_items" not in table.__dict__:
        return
    _replace(table, "all_items", _all_items)
