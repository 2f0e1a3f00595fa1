"""TransactWriteItems without copying whole tables, for the local stack and the integration tests.

moto 5.2.5 backs up every table a transaction touches with `copy.deepcopy(table)` before it starts,
so each transaction costs O(items in those tables): Fire creation (a transaction with a check on the
schedule) slowed down linearly as a test session or a local stack filled its Fires and Schedules
tables. Here the backup is of the items the transaction names, taken before it runs and put back if
it is cancelled, which leaves the tables as moto's whole-table restore would. Installed only when
moto is the version this was written for (moto_patches.MOTO_VERSION); otherwise moto's own code runs
and one warning is logged.
"""

from __future__ import annotations

import copy
from typing import Any

from moto.dynamodb import models as _models

from edgecron_cli.local import moto_patches

dynamodb_models: Any = _models  # moto's internals, untyped here on purpose

PATCH = "TransactWriteItems backs up the items it names, not whole tables"

_installed: list[Any] = []


class _TablesAsIs:
    """moto's module-level `copy` for its DynamoDB models: a Table "copies" as itself (the backup of
    the items is taken by the wrapper instead); everything else is copied as before."""

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        if isinstance(value, dynamodb_models.Table):
            return value
        return copy.deepcopy(value, memo)


def install() -> bool:
    """Install once; False (and a warning) when moto is not the version this was written for."""
    if _installed:
        return True
    backend = dynamodb_models.DynamoDBBackend
    shapes = [(backend, "transact_write_items"), (backend, "get_item"), (dynamodb_models, "copy")]
    if not moto_patches.applies(PATCH, shapes) or "transact_write_items" not in backend.__dict__:
        return False
    original = backend.__dict__["transact_write_items"]

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        before = _items_before(self, transact_items)
        try:
            original(self, transact_items)
        except Exception:
            _put_back(self, before)
            raise

    _installed.append((backend, original, dynamodb_models.copy))
    backend.transact_write_items = transact_write_items
    dynamodb_models.copy = _TablesAsIs
    return True


def _items_before(
    backend: Any, transact_items: list[dict[str, Any]]
) -> list[tuple[str, dict[str, Any], Any]]:
    """(table, key, the item as it is now or None) for every item the transaction names."""
    before = []
    for entry in transact_items[:100]:
        if len(entry) != 1:
            continue
        op_type, op = next(iter(entry.items()))
        table_name = op.get("TableName") if isinstance(op, dict) else None
        if not table_name or table_name not in backend.tables:
            continue
        table = backend.tables[table_name]
        try:
            if op_type == "Put":
                attrs = op["Item"]
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]
            current = backend.get_item(table_name, key)
        except Exception:  # noqa: S112 - moto reports a malformed entry itself
            continue
        before.append((table_name, key, copy.deepcopy(current.to_json()["Attributes"]) if current else None))
    return before


def _put_back(backend: Any, before: list[tuple[str, dict[str, Any], Any]]) -> None:
    for table_name, key, item in reversed(before):
        if item is None:
            backend.delete_item(table_name, key)
        else:
            backend.put_item(table_name, item)
