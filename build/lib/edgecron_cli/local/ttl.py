"""DynamoDB TTL deletion, which moto never performs.

DynamoDB deletes an item some time after the epoch second in its TTL attribute has passed (within a
few days, in the background), never one whose attribute is not a Number, nor one that expired more
than five years ago. Code that still needs an item after its TTL works against moto forever and
loses the item in AWS. `TtlSweeper.sweep` deletes what DynamoDB would be allowed to delete by a
given time; the local stack runs it every EDGECRON_LOCAL_TTL_SWEEP_SEC seconds, and the integration
tests call it on demand at the injected clock's time.

Each deletion is a DeleteItem conditioned on the TTL value it saw, so an item whose TTL was moved
meanwhile stays, as in DynamoDB.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import ClientError

log = logging.getLogger("edgecron_cli.local")

FIVE_YEARS_S = 5 * 365 * 86_400
ListItems = Callable[[str], list[dict[str, Any]]]


def is_expired(value: Any, now_s: float) -> bool:
    """Whether DynamoDB may delete an item whose TTL attribute is `value` (DynamoDB JSON) at `now_s`."""
    if not isinstance(value, dict) or set(value) != {"N"}:
        return False
    try:
        expires_s = float(value["N"])
    except (TypeError, ValueError):
        return False
    return now_s - FIVE_YEARS_S <= expires_s < now_s


class TtlSweeper:
    """Deletes expired items of every table whose TTL is enabled, through the DynamoDB API."""

    def __init__(self, dynamodb: Any, list_items: ListItems | None = None) -> None:
        self._dynamodb = dynamodb
        self._list_items = list_items or self._scan

    def tables(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """{table: (TTL attribute, key attributes)} of the tables with TTL enabled."""
        found: dict[str, tuple[str, tuple[str, ...]]] = {}
        for page in self._dynamodb.get_paginator("list_tables").paginate():
            for name in page.get("TableNames", []):
                ttl = self._dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
                if ttl.get("TimeToLiveStatus") != "ENABLED" or not ttl.get("AttributeName"):
                    continue
                schema = self._dynamodb.describe_table(TableName=name)["Table"]["KeySchema"]
                found[name] = (str(ttl["AttributeName"]), tuple(str(k["AttributeName"]) for k in schema))
        return found

    def sweep(self, now_s: float) -> int:
        """Delete every item DynamoDB may have deleted by `now_s` (epoch seconds); how many were."""
        deleted = 0
        for table, (attribute, keys) in self.tables().items():
            for item in self._list_items(table):
                value = item.get(attribute)
                if is_expired(value, now_s) and self._delete(table, attribute, value, item, keys):
                    deleted += 1
        return deleted

    def _delete(
        self, table: str, attribute: str, value: Any, item: dict[str, Any], keys: tuple[str, ...]
    ) -> bool:
        try:
            self._dynamodb.delete_item(
                TableName=table,
                Key={name: item[name] for name in keys},
                ConditionExpression="#ttl = :ttl",
                ExpressionAttributeNames={"#ttl": attribute},
                ExpressionAttributeValues={":ttl": value},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False  # changed or deleted meanwhile
            raise
        return True

    def _scan(self, table: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in self._dynamodb.get_paginator("scan").paginate(TableName=table):
            items.extend(page.get("Items", []))
        return items


def run_sweeps(sweeper: TtlSweeper, interval_s: float, stop: threading.Event) -> None:
    """The local stack's background deletion: a sweep at the wall-clock time every `interval_s`."""
    while not stop.wait(interval_s):
        try:
            deleted = sweeper.sweep(time.time())
        except Exception:
            log.exception("TTL sweep failed; the next one is in %.0f s", interval_s)
            continue
        if deleted:
            log.info("TTL: deleted %d expired items", deleted)


DEFAULT_LOCAL_SWEEP_SEC = 60.0


def local_sweep_interval(environ: Mapping[str, str] = os.environ) -> float:
    """EDGECRON_LOCAL_TTL_SWEEP_SEC: seconds between the local stack's TTL sweeps (0 = none)."""
    raw = environ.get("EDGECRON_LOCAL_TTL_SWEEP_SEC", "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_LOCAL_SWEEP_SEC
    except ValueError:
        value = DEFAULT_LOCAL_SWEEP_SEC
    return max(0.0, value)
