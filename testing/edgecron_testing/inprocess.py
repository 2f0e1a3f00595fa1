"""The in-process AWS environment of the integration tests and the in-process benchmarks: moto started
on import, every table, queue and topic provisioned from template.yaml, each handler's calls checked
against its role, and the AWS fidelity the emulator adds (limits, index lag, TTL deletion).

Import it before the core package is used: the handlers' settings are read from the environment it
sets (on first use, so importing the core earlier is fine; reading a setting earlier is not).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_METRICS_NAMESPACE": "EdgeCron",
        "POWERTOOLS_SERVICE_NAME": "edgecron",
    }
)
os.environ.pop("AWS_ENDPOINT_URL", None)

from moto import mock_aws

from edgecron_cli.local.provision import provision_from_template
from edgecron_testing import iam as iam_support
from edgecron_testing.faults import InvocationKilled
from edgecron_testing.harness import ROOT, call_api, invoke, sqs_event

ADMIN_KEY = "test-admin-key-0123456789"

_mock = mock_aws()
_mock.start()


def _atomic_aws_calls() -> None:
    """Each AWS call is atomic, as every DynamoDB operation is; threads (the worker's concurrent
    batch, concurrent scans) interleave between calls. In-process moto is not atomic within one call."""
    import botocore.client

    lock = threading.RLock()
    original = botocore.client.BaseClient._make_api_call

    def locked(self: Any, operation: str, params: Any) -> Any:
        with lock:
            return original(self, operation, params)

    botocore.client.BaseClient._make_api_call = locked  # type: ignore[method-assign]


_atomic_aws_calls()

# Transactions back up the items they name, not whole tables (moto's copy grows with the session).
from edgecron_cli.local import moto_transactions  # noqa: E402

moto_transactions.install()

# The local stack's moto speed-ups: the same answers (tests/unit/test_local_moto_speedups.py compares
# them with moto's own code) in a fraction of the CPU; nothing here freezes time.
from edgecron_cli.local import moto_speedups  # noqa: E402

moto_speedups.install()

# AWS fidelity: limits, index lag, TTL deletion (docs/local-stack.md, "What the emulator imitates") ---
from edgecron_testing.aws_fidelity import IndexTime, install_for_tests  # noqa: E402

FIDELITY = install_for_tests()
assert FIDELITY.lag is not None
INDEX_TIME = IndexTime(FIDELITY.lag)
DEFAULT_INDEX_LAG_MS = INDEX_TIME.lag_ms


PROVISIONED = provision_from_template(ROOT / "template.yaml", secret_values={"AdminKeySecret": ADMIN_KEY})
IAM = iam_support.install(PROVISIONED)  # each handler's calls are checked against its role
os.environ.update(PROVISIONED.environment())
os.environ.update({"ALLOWED_CIDRS": "127.0.0.0/8,::1/128", "ALLOW_HTTP": "true", "CLAIM_SEC": "60"})

from edgecron.config import get_settings  # noqa: E402

get_settings.cache_clear()


def queue(logical_id: str) -> Any:
    return PROVISIONED.queues[logical_id]


def drain_queues() -> None:
    """Empty every queue, delayed and in-flight messages included (PurgeQueue is limited to 1/min)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    backend = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    for info in PROVISIONED.queues.values():
        q = backend.queues[info.name]
        q._messages.clear()
        q._pending_messages.clear()


def retire_runs() -> None:
    """Delete every unfinished run (in the wake index or not) and move every App's check mark past
    any run, so no test's runs wake up in the next one and the scan's check of recent runs skips
    the Apps of earlier tests."""
    from edgecron.data import run_checks
    from edgecron.data.keys import AFTER_ANY_SUFFIX
    from edgecron.data.models import TaskRunModel as R

    unfinished = R.wake_shard.exists() | R.status.is_in("pending", "running", "retry_scheduled")
    with R.batch_write() as batch:  # deleting is cheaper than updating thousands of fan-out runs
        for run in R.scan(unfinished):
            batch.delete(run)
    for apps in run_checks.app_pages():
        marks = run_checks.marks([app_id for app_id, _ in apps])
        for app_id, _ in apps:
            mark = marks.get(app_id)
            if mark is None or mark.checked_key != AFTER_ANY_SUFFIX:
                run_checks.set_checked_key(app_id, AFTER_ANY_SUFFIX)


def retire_schedules() -> None:
    """Take every schedule out of the due index, so one test's schedules never fire in the next, and
    forget where the last scan left the due walk: the next test's clock may stand anywhere."""
    from edgecron.data.models import ScheduleModel

    for schedule in ScheduleModel.scan(ScheduleModel.due_shard.exists()):
        schedule.update(actions=[ScheduleModel.due_shard.remove(), ScheduleModel.status.set("PAUSED")])
    forget_due_walk()


def due_walk_left_at(mark_ms: int) -> None:
    """As if the last complete scan tick had ended its window at `mark_ms`, every schedule having its
    slot (a steady state, not a stack's first tick)."""
    from edgecron.data import schedules as schedule_data

    forget_due_walk()
    schedule_data.move_due_mark(mark_ms)
    schedule_data.save_backfill(None, mark_ms)


def forget_due_walk(*, backfilled: bool = True) -> None:
    """Forget where the last scan tick left the due walk (the next tick reads every slot), and with
    `backfilled` false, that every schedule has a slot (the next tick looks for those without)."""
    from edgecron.data import schedules as schedule_data
    from edgecron.data.models import DueMarkModel as D

    actions = [D.mark.remove()] + ([] if backfilled else [D.backfilled_at.remove(), D.backfill_from.remove()])
    D(schedule_data.MARK_PARTITION, schedule_data.MARK_KEY).update(actions)


def app_runs(app_id: str) -> list[Any]:
    """Every Task Run of the App, newest first, as the table holds them now: each of its partitions
    read from moto's backend (the test's own look, not a read of the code under test)."""
    from edgecron.data.keys import app_run_partitions
    from edgecron.data.models import TaskRunModel as R
    from edgecron_cli.local.moto_server import partition_items

    table = R.Meta.table_name
    runs = [
        R.from_raw_data(item) for part in app_run_partitions(app_id) for item in partition_items(table, part)
    ]
    return sorted(runs, key=lambda run: run.run_id, reverse=True)


def app_of_run(run_id: str) -> str:
    """The App of a run a test knows only by id (what a delivery message carries beside the id),
    read from moto's backend."""
    from edgecron.data.models import TaskRunModel as R
    from edgecron_cli.local.moto_server import item_by_sort_key

    item = item_by_sort_key(R.Meta.table_name, run_id)
    return str(item["app_id"]["S"]) if item is not None else ""


def stored_run(run_id: str) -> Any:
    """The item of a run as the table holds it now, index keys and all (None if there is none), read
    from moto's backend: what a test checks the data layer wrote, beside the entity it returns."""
    from edgecron.data.models import TaskRunModel as R
    from edgecron_cli.local.moto_server import item_by_sort_key

    item = item_by_sort_key(R.Meta.table_name, run_id)
    return None if item is None else R.from_raw_data(item)


def new_app(name: str = "test") -> tuple[str, str]:
    resp = call_api("POST", "/v1/apps", body={"name": name}, key=ADMIN_KEY)
    assert resp.status == 201, resp.body
    return resp.body["app"]["id"], resp.body["api_key"]


class Pump:
    """Drive SQS → Lambda the way the event source mapping does, until the queues are quiet."""

    def __init__(self) -> None:
        import boto3

        self.sqs = boto3.client("sqs", region_name="us-east-1")

    def once(self, logical_id: str, function: str, batch: int = 10) -> int:
        info = queue(logical_id)
        got = self.sqs.receive_message(
            QueueUrl=info.url,
            MaxNumberOfMessages=batch,
            WaitTimeSeconds=0,
            AttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        )
        messages = got.get("Messages", [])
        if not messages:
            return 0
        try:
            result = invoke(function, sqs_event(messages, info.arn)) or {}
        except InvocationKilled:
            return len(messages)  # the function died: SQS gives the batch again after its visibility timeout
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        for m in messages:
            if m["MessageId"] not in failed:
                self.sqs.delete_message(QueueUrl=info.url, ReceiptHandle=m["ReceiptHandle"])
        return len(messages)

    def deliveries(
        self, *, quiet_for: float = 0.0, timeout: float = 15.0, until: Callable[[], bool] | None = None
    ) -> int:
        """Process delivery and retry messages; with quiet_for, wait that long for delayed ones. With
        `until`, go on (up to the timeout) until it holds: a test that waits for a known outcome,
        such as a retry falling due, then does not depend on how busy the machine is."""
        total = 0
        deadline = time.time() + timeout
        quiet_since = time.time()
        while time.time() < deadline:
            n = self.once("DeliveryQueue", "worker")
            total += n
            if n:
                quiet_since = time.time()
            elif until is not None:
                if until():
                    break
                time.sleep(0.05)
            elif time.time() - quiet_since >= quiet_for:
                break
            else:
                time.sleep(0.05)
        return total

    def depth(self, logical_id: str) -> int:
        attrs = self.sqs.get_queue_attributes(QueueUrl=queue(logical_id).url, AttributeNames=["All"])[
            "Attributes"
        ]
        return (
            int(attrs["ApproximateNumberOfMessages"])
            + int(attrs["ApproximateNumberOfMessagesDelayed"])
            + int(attrs["ApproximateNumberOfMessagesNotVisible"])
        )


class TableCalls:
    """Counts the `operation` calls (GetItem, UpdateItem, ...) on the items of `model`'s table while the
    block runs, only those under one `app_id` partition if given (another test's late worker thread in
    this process may write its own App's)."""

    def __init__(self, model: Any, operation: str, partition: str | None = None) -> None:
        self.partition = partition
        self.calls = 0
        self._table = model.Meta.table_name
        self._event = f"before-call.dynamodb.{operation}"
        self._events = model._get_connection().connection.client.meta.events

    def __enter__(self) -> TableCalls:
        self._events.register(self._event, self._seen)
        return self

    def __exit__(self, *_: object) -> None:
        self._events.unregister(self._event, self._seen)

    def _seen(self, params: dict[str, Any], **_: object) -> None:
        body = json.loads(params.get("body") or b"{}")
        if body.get("TableName") != self._table:
            return
        if self.partition is None or body.get("Key", {}).get("app_id", {}).get("S") == self.partition:
            self.calls += 1


class UpdateItemCalls(TableCalls):
    """The UpdateItem calls on one `app_id` partition of `model`'s table (usage counters, flow state)."""

    def __init__(self, model: Any, partition: str) -> None:
        super().__init__(model, "UpdateItem", partition)

    @property
    def updates(self) -> int:
        return self.calls


def usage_writes(app_id: str) -> UpdateItemCalls:
    """The writes of one App's usage counters."""
    from edgecron.data.models import UsageModel

    return UpdateItemCalls(UsageModel, app_id)
