"""The integration tests' in-process environment (moto, provisioned from template.yaml), reused as is,
with every Lambda invocation timed and every AWS call metered.

`environment()` imports edgecron_testing.inprocess (the integration tests' environment), which starts
moto and provisions every table and queue before the core package is used; under pytest (the smoke
test) that module is already loaded and its environment is reused. Lambda's SQS event source mapping is emulated by `EsmPump` the way
Lambda does it (receive up to BatchSize, invoke, one DeleteMessageBatch for what succeeded), so its SQS
requests are counted too: they are billed to the account like any other."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from bench import dynamo, prices
from bench.meter import INVOCATION, ORIGIN, Invocation, Meter, Usage, install

POLLER = "sqs-poller"  # origin of the event source mapping's own SQS requests


@dataclass(frozen=True)
class ApiResult:
    status: int
    body: Any


def _moto_peek(table: str, key: Any) -> dict[str, Any] | None:
    """The stored item, read from moto's backend directly (no AWS call, so nothing is counted)."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    region = os.environ.get("AWS_REGION", "us-east-1")
    item = dynamodb_backends[DEFAULT_ACCOUNT_ID][region].get_item(table, dict(key))
    if item is None:
        return None
    attributes: dict[str, Any] = item.to_json()["Attributes"]
    return attributes


@contextmanager
def origin(name: str) -> Iterator[None]:
    token = ORIGIN.set(name)
    try:
        yield
    finally:
        ORIGIN.reset(token)


def quiet_earlier_apps() -> None:
    """Run the check of recent runs as a tick would once every App's cover has run out: each App
    is read one last time and its mark moves past its cover, so later ticks skip it until it creates
    a run again. Without this, a scenario's check would also query the Apps of the scenarios before
    it, whose covers still run (the cost of an App's quiet tail, which no scenario's deliveries
    cause: docs/benchmarks.md prices it apart)."""
    from datetime import UTC, datetime, timedelta

    from edgecron import clock
    from edgecron.config import get_settings
    from edgecron.data import run_checks
    from edgecron.services import scan

    lag_ms = run_checks.check_lag_ms(get_settings())
    later = datetime.now(UTC) + timedelta(milliseconds=run_checks.COVER_MS + lag_ms + 60_000)
    clock.set_clock(clock.FixedClock(later))
    try:
        with origin("setup"), redirect_stdout(io.StringIO()):
            scan.check_runs(clock.now(), scan.ScanReport())
    finally:
        clock.set_clock(clock.SystemClock())


class Env:
    """moto + the template's resources + a meter; `invoke` and `api` run the real handlers."""

    def __init__(self, conftest: ModuleType) -> None:
        self.conftest = conftest
        provisioned = conftest.PROVISIONED
        schemas = dynamo.schemas_from_template(prices.table_properties(), provisioned.tables)
        queues = {info.url: logical for logical, info in provisioned.queues.items()}
        self.meter = Meter(schemas, queues, _moto_peek)
        install()  # before the clients below exist, so they carry the handlers from their session on

    @property
    def admin_key(self) -> str:
        return str(self.conftest.ADMIN_KEY)

    def queue(self, logical_id: str) -> Any:
        return self.conftest.PROVISIONED.queues[logical_id]

    def new_app(self, name: str) -> tuple[str, str]:
        with redirect_stdout(io.StringIO()):  # the API function's EMF lines
            app_id, key = self.conftest.new_app(name)
        return str(app_id), str(key)

    def reset(self) -> None:
        """Empty the queues, take every schedule out of the due index (as between two tests) and let
        every earlier App go quiet, so a window's check of recent runs reads its own App's runs only."""
        quiet_earlier_apps()  # before the queues are emptied: it may send a run still unfinished
        self.conftest.drain_queues()
        self.conftest.retire_schedules()

    @contextmanager
    def window(self) -> Iterator[Usage]:
        """Meter a stretch of work, with the handlers' log output counted at the template's INFO level."""
        from edgecron.observability import logger

        handler = logger.registered_handler
        level = logger.log_level
        with self.meter.window() as usage:
            stream = getattr(handler, "stream", None)
            if stream is not None:
                handler.setStream(self.meter.logs)  # type: ignore[attr-defined]
            logger.setLevel("INFO")
            try:
                yield usage
            finally:
                logger.setLevel(level)
                if stream is not None:
                    handler.setStream(stream)  # type: ignore[attr-defined]

    def invoke(self, name: str, event: dict[str, Any], records: int = 1) -> Any:
        """Run functions/<name>/app.py like a warm Lambda container, timed and attributed."""
        from edgecron_testing.harness import invoke

        record = Invocation(function=name, records=records)
        origin_token = ORIGIN.set(name)
        invocation_token = INVOCATION.set(record)
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            with redirect_stdout(self.meter.logs):
                return invoke(name, event)
        finally:
            record.wall_s = time.perf_counter() - started
            record.cpu_s = time.process_time() - cpu_started
            INVOCATION.reset(invocation_token)
            ORIGIN.reset(origin_token)
            self.meter.record_invocation(record)

    def api(
        self, method: str, path: str, *, key: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> ApiResult:
        """An HTTP API request, as API Gateway hands it to the API function."""
        from edgecron_testing.harness import api_event, response_body

        result = self.invoke("api", api_event(method, path, body=body, key=key, headers=headers))
        return ApiResult(int(result["statusCode"]), response_body(result))


class EsmPump:
    """Lambda's SQS event source mappings for the worker and fan-out queues, driven by hand."""

    SOURCES = (("FanoutQueue", "fanout"), ("DeliveryQueue", "worker"))

    def __init__(self, env: Env) -> None:
        import boto3

        self.env = env
        self.sqs = boto3.session.Session().client(
            "sqs", region_name=os.environ.get("AWS_REGION", "us-east-1")
        )
        self.invocations = 0

    def poll(self, queue_logical_id: str, function: str) -> int:
        from edgecron_testing.harness import sqs_event

        info = self.env.queue(queue_logical_id)
        batch = prices.functions()[function].sqs_batch_sizes.get(queue_logical_id, 10)
        with origin(POLLER):
            messages = self.sqs.receive_message(
                QueueUrl=info.url,
                MaxNumberOfMessages=min(batch, 10),
                WaitTimeSeconds=0,
                AttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
            ).get("Messages", [])
        if not messages:
            return 0
        result = self.env.invoke(function, sqs_event(messages, info.arn), records=len(messages)) or {}
        self.invocations += 1
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            with origin(POLLER):
                self.sqs.delete_message_batch(
                    QueueUrl=info.url,
                    Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
                )
        return len(messages)

    def drain(self, until: Callable[[], bool], *, timeout: float, settle: float = 0.3) -> bool:
        """Poll every source until `until()` holds and the queues stayed empty for `settle` seconds
        (bounded by `timeout`); True when `until()` held."""
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            moved = sum(self.poll(queue, function) for queue, function in self.SOURCES)
            if moved:
                quiet_since = time.monotonic()
            elif until() and time.monotonic() - quiet_since >= settle:
                return True
            else:
                time.sleep(0.05)
        return until()


@cache
def environment() -> Env:
    """The shared in-process environment (created once per process)."""
    from edgecron_testing import inprocess as conftest

    return Env(conftest)
