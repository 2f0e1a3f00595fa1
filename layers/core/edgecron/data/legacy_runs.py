"""The Task Runs table of earlier releases (key `run_id` alone), read while a stack is upgraded to
the table keyed by App partition and run id (`app_part`, `run_id`). The upgrade (docs/upgrade.md): new runs go to the new
table; a run not found there is read from the old one; an old run is copied over, conditionally,
before its first write; a resumable copy moves the rest. Only this module knows the old table."""

from __future__ import annotations

import json
from typing import Any

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data.aws import client
from edgecron.data.keys import run_partition
from edgecron.data.models import RUNS_CHECKED_MONTH, RUNS_COPIED_APP, RunsCheckedModel, TaskRunModel
from edgecron.domain import run_states as st

COPY_PAGE = 100  # old items read per Scan page of the copy
DONE = "done"


def enabled() -> bool:
    """The old table is still part of the stack (its name is configured)."""
    return bool(get_settings().legacy_runs_table)


def _item(run_id: str, consistent: bool) -> dict[str, Any] | None:
    found = client("dynamodb").get_item(
        TableName=get_settings().legacy_runs_table, Key={"run_id": {"S": run_id}}, ConsistentRead=consistent
    )
    item: dict[str, Any] | None = found.get("Item")
    return item


def get(app_id: str, run_id: str, *, consistent: bool) -> TaskRunModel | None:
    """The App's run `run_id` in the old table (None once the old table is gone, or another App's)."""
    if not enabled() or not app_id or not run_id:
        return None
    item = _item(run_id, consistent)
    if item is None or item.get("app_id", {}).get("S") != app_id:
        return None
    return TaskRunModel.from_raw_data(_partitioned(item))


def _partitioned(item: dict[str, Any]) -> dict[str, Any]:
    """An old item with the new table's partition key: the App's partition its run id hashes to."""
    return {**item, "app_part": {"S": run_partition(item["app_id"]["S"], item["run_id"]["S"])}}


def _looked_after(item: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """An unfinished run without a `wake` entry (sent at its creation, checked by an earlier
    release's check of recent runs) gets one, due now: the scan looks after it from then on."""
    status = item.get("status", {}).get("S")
    if status in st.TERMINAL or "wake_shard" in item:
        return item
    shard = ids.shard_of(item["run_id"]["S"], get_settings().shards)
    return {**item, "wake_shard": {"S": shard}, "wake_at": {"N": str(now_ms)}}


def _put_new(item: dict[str, Any], now_ms: int) -> bool:
    """Copy one old item unless the new table has the run already (a copy never overwrites)."""
    item = _looked_after(_partitioned(item), now_ms)
    try:
        client("dynamodb").put_item(
            TableName=get_settings().runs_table,
            Item=item,
            ConditionExpression="attribute_not_exists(run_id)",
        )
        return True
    except client("dynamodb").exceptions.ConditionalCheckFailedException:
        return False


def copy_up(app_id: str, run_id: str, now_ms: int) -> bool:
    """Before a write to a run the new table does not have: copy it from the old table. True if the
    old table has it (whoever copied it), so the write is worth trying again."""
    if not enabled():
        return False
    item = _item(run_id, consistent=True)
    if item is None or item.get("app_id", {}).get("S") != app_id:
        return False
    _put_new(item, now_ms)
    return True


def _mark() -> RunsCheckedModel:
    try:
        return RunsCheckedModel.get(RUNS_COPIED_APP, RUNS_CHECKED_MONTH, consistent_read=True)
    except RunsCheckedModel.DoesNotExist:
        return RunsCheckedModel(app_id=RUNS_COPIED_APP, month=RUNS_CHECKED_MONTH, checked_key="")


def copy_done() -> bool:
    return not enabled() or _mark().checked_key == DONE


def copy_step(now_ms: int) -> tuple[int, bool]:
    """Copy one Scan page of the old table, then move the copy's mark past it: (items copied, done).
    Resumable (the mark moves only after its page is copied) and idempotent (every put is
    conditional), so an interrupted copy goes on where it stopped and a page copied twice is copied
    once."""
    mark = _mark()
    if not enabled() or mark.checked_key == DONE:
        return 0, True
    start = json.loads(mark.checked_key) if mark.checked_key else None
    args: dict[str, Any] = {
        "TableName": get_settings().legacy_runs_table,
        "Limit": COPY_PAGE,
        "ConsistentRead": True,
    }
    if start:
        args["ExclusiveStartKey"] = start
    page = client("dynamodb").scan(**args)
    copied = sum(_put_new(item, now_ms) for item in page.get("Items", []))
    last = page.get("LastEvaluatedKey")
    mark.checked_key = json.dumps(last) if last else DONE
    mark.save()
    return copied, last is None


def list_from_top(app_id: str) -> dict[str, Any]:
    """The list cursor after the new table's runs of the App: the old table's runs come next."""
    return {"app_id": {"S": app_id}, "legacy_list": {"S": "top"}}


def is_list_cursor(cursor: dict[str, Any] | None) -> bool:
    """A list cursor into the old table's part of an App's runs (its `by_app` index, or its top)."""
    return cursor is not None and ("created_key" in cursor or "legacy_list" in cursor)


def list_keys(
    app_id: str, start: dict[str, Any], size: int
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any] | None]:
    """Up to `size` (run_id, index key) of the App's runs in the old table, newest first, after
    `start` (list_from_top: from the newest), and the index's LastEvaluatedKey."""
    args: dict[str, Any] = {
        "TableName": get_settings().legacy_runs_table,
        "IndexName": "by_app",
        "KeyConditionExpression": "app_id = :a",
        "ExpressionAttributeValues": {":a": {"S": app_id}},
        "ScanIndexForward": False,
        "Limit": size,
    }
    if "legacy_list" not in start:
        args["ExclusiveStartKey"] = start
    page = client("dynamodb").query(**args)
    keys = [
        (item["run_id"]["S"], {k: item[k] for k in ("run_id", "app_id", "created_key")})
        for item in page.get("Items", [])
    ]
    return keys, page.get("LastEvaluatedKey")


def not_copied(app_id: str, run_ids: list[str]) -> dict[str, TaskRunModel]:
    """The old table's runs among `run_ids` that the new table does not have yet (a copied run was
    listed with the new table's runs already)."""
    copied = {run.run_id for run in TaskRunModel.batch_get([(run_partition(app_id, i), i) for i in run_ids])}
    found = (get(app_id, run_id, consistent=False) for run_id in run_ids if run_id not in copied)
    return {run.run_id: run for run in found if run is not None}
