"""Eventually consistent global secondary indexes, which moto reads with strong consistency.

DynamoDB propagates a write to a GSI asynchronously (usually within a second): a Query or Scan on
the index right after the write may not see it. Code that reads its own write through an index
works against moto and fails in AWS now and then. `IndexLag` makes that visible: an item whose
index key attributes were written less than `lag_ms` ago (by the injected clock) is left out of
that index's Query and Scan answers. A test can settle the index at once (`settle`), and an
observer that is not the code under test can read without the lag (`unlagged`).

What it does not imitate: AWS would show the previous version of an updated or deleted item for a
while (here it is simply absent, or gone at once), and a `Select=COUNT` answer is not adjusted.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "BatchWriteItem", "TransactWriteItems"})
READ_OPERATIONS = frozenset({"Query", "Scan"})
_PRUNE_EVERY = 2_000
_NAME = re.compile(r"(?<![:\w#])#?[A-Za-z_]\w*")
_KEYWORDS = frozenset({"SET", "REMOVE", "ADD", "DELETE", "if_not_exists", "list_append"})


@dataclass(frozen=True)
class TableShape:
    """A table's key attributes and each global secondary index's key attributes."""

    keys: tuple[str, ...]
    indexes: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_description(cls, table: dict[str, Any]) -> TableShape:
        def names(schema: list[dict[str, Any]]) -> tuple[str, ...]:
            return tuple(str(part["AttributeName"]) for part in schema)

        indexes = {
            str(index["IndexName"]): names(index["KeySchema"])
            for index in table.get("GlobalSecondaryIndexes") or []
        }
        return cls(names(table["KeySchema"]), indexes)

    def key_id(self, item: dict[str, Any]) -> str:
        """The item's table key as one string (key attributes are scalars: S, N or B)."""
        parts = []
        for name in self.keys:
            value = item.get(name)
            if isinstance(value, dict) and len(value) == 1:
                ((kind, inner),) = value.items()
                parts.append(f"{kind}:{inner!r}")
            else:
                parts.append(repr(value))
        return "\x1f".join(parts)


def updated_attributes(params: dict[str, Any]) -> set[str]:
    """The attribute names an UpdateItem's UpdateExpression (or AttributeUpdates) sets or removes."""
    touched = set((params.get("AttributeUpdates") or {}).keys())
    expression = params.get("UpdateExpression")
    if isinstance(expression, str):
        names = params.get("ExpressionAttributeNames") or {}
        for token in _NAME.findall(expression):
            if token.startswith("#"):
                touched.add(str(names.get(token, token)))
            elif token not in _KEYWORDS:
                touched.add(token)
    return touched


class IndexLag:
    """Per-index write log: (table, index, item key) -> when its index keys were last written."""

    def __init__(self, lag_ms: float, now_ms: Callable[[], float]) -> None:
        self.lag_ms = lag_ms
        self._now_ms = now_ms
        self._written: dict[tuple[str, str, str], float] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._records = 0

    # writes ------------------------------------------------------------------------------------------

    def record(
        self, operation: str, params: dict[str, Any], shape_of: Callable[[str], TableShape | None]
    ) -> None:
        """Log a successful write call: which index entries it changed, at the injected time."""
        if self.lag_ms <= 0:
            return
        changes: list[tuple[str, str, str]] = []
        if operation == "PutItem":
            changes += _put_changes(params.get("TableName"), params.get("Item"), shape_of)
        elif operation == "UpdateItem":
            changes += _update_changes(params, shape_of)
        elif operation == "BatchWriteItem":
            for table, requests in (params.get("RequestItems") or {}).items():
                for request in requests or []:
                    put = request.get("PutRequest") if isinstance(request, dict) else None
                    if isinstance(put, dict):
                        changes += _put_changes(table, put.get("Item"), shape_of)
        elif operation == "TransactWriteItems":
            for entry in params.get("TransactItems") or []:
                if not isinstance(entry, dict):
                    continue
                if isinstance(entry.get("Put"), dict):
                    changes += _put_changes(entry["Put"].get("TableName"), entry["Put"].get("Item"), shape_of)
                elif isinstance(entry.get("Update"), dict):
                    changes += _update_changes(entry["Update"], shape_of)
        if not changes:
            return
        now = self._now_ms()
        with self._lock:
            for change in changes:
                self._written[change] = now
            self._records += 1
            if self._records % _PRUNE_EVERY == 0:
                self._written = {k: t for k, t in self._written.items() if self._hidden(t, now)}

    # reads -------------------------------------------------------------------------------------------

    def visible(self, table: str, index: str, shape: TableShape, result: dict[str, Any]) -> dict[str, Any]:
        """The answer of a Query or Scan on `index` without the items the index has not caught up with."""
        items = result.get("Items")
        if self.lag_ms <= 0 or not isinstance(items, list) or getattr(self._local, "unlagged", False):
            return result
        now = self._now_ms()
        with self._lock:
            if not self._written:
                return result
            kept = [
                item
                for item in items
                if not self._hidden(self._written.get((table, index, shape.key_id(item))), now)
            ]
        if len(kept) == len(items):
            return result
        answer = dict(result)
        answer["Items"] = kept
        answer["Count"] = len(kept)
        return answer

    def _hidden(self, written_ms: float | None, now_ms: float) -> bool:
        """Not yet in the index: written less than the lag ago (a clock set back counts as caught up)."""
        return written_ms is not None and 0 <= now_ms - written_ms < self.lag_ms

    # control -----------------------------------------------------------------------------------------

    def settle(self) -> None:
        """Every index catches up with every write made so far."""
        with self._lock:
            self._written.clear()

    def pending(self) -> int:
        """How many index entries are still behind their item."""
        now = self._now_ms()
        with self._lock:
            return sum(1 for t in self._written.values() if self._hidden(t, now))

    @contextlib.contextmanager
    def unlagged(self) -> Iterator[None]:
        """Reads of this thread see every index up to date (for a test's own observations)."""
        previous = getattr(self._local, "unlagged", False)
        self._local.unlagged = True
        try:
            yield
        finally:
            self._local.unlagged = previous


def _put_changes(
    table: Any, item: Any, shape_of: Callable[[str], TableShape | None]
) -> list[tuple[str, str, str]]:
    if not isinstance(table, str) or not isinstance(item, dict):
        return []
    shape = shape_of(table)
    if shape is None or not shape.indexes:
        return []
    key = shape.key_id(item)
    return [(table, index, key) for index, names in shape.indexes.items() if all(n in item for n in names)]


def _update_changes(
    params: dict[str, Any], shape_of: Callable[[str], TableShape | None]
) -> list[tuple[str, str, str]]:
    table, key = params.get("TableName"), params.get("Key")
    if not isinstance(table, str) or not isinstance(key, dict):
        return []
    shape = shape_of(table)
    if shape is None or not shape.indexes:
        return []
    touched = updated_attributes(params)
    key_id = shape.key_id(key)
    return [(table, index, key_id) for index, names in shape.indexes.items() if touched & set(names)]
