"""Count what the pipeline asks of AWS while a benchmark runs, through botocore's event hooks.

How the hooks reach every client. A botocore client copies its session's handlers when it is created,
and the code under test makes clients in several ways: a botocore session per client in
`edgecron.data.aws`, and one botocore session per thread and connection inside pynamodb. So `install()`:
1. appends the handlers to `botocore.handlers.BUILTIN_HANDLERS`, the list every new botocore Session
   registers (the same mechanism moto uses for its stubber), which covers every client made afterwards;
2. registers them on every client and session already alive (found with `gc`), e.g. when the
   integration tests made their clients before the smoke test installs the meter.
A client may therefore hold the handlers twice; each call is counted once, because the first handler
marks the call's request context. Nothing is monkeypatched, and the handlers do nothing unless a
`Meter` is active.

Per call the meter keeps: the request count by origin (the function, or Lambda's SQS poller, that
made it), service, operation and resource; SQS requests in billed 64 KB chunks; DynamoDB capacity from
item sizes (bench.dynamo), next to what the response's ConsumedCapacity says (ReturnConsumedCapacity=TOTAL
is injected when the caller did not ask); and the time spent in the call, split into botocore's own
work and the service's answer (moto, in-process), for the Lambda duration model."""

from __future__ import annotations

import gc
import io
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import botocore.client
import botocore.handlers
import botocore.session

from bench import dynamo

SQS_CHUNK_BYTES = 64 * 1024
IDLE_POLL = "idle-poll"  # empty ReceiveMessage: Lambda's pollers do it whether or not work arrives

Peek = Callable[[str, Mapping[str, Any]], dict[str, Any] | None]

_CONTEXT_KEY = "edgecron_bench_call"
_WRITE_OPS = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
_CONDITION_ERRORS = {"ConditionalCheckFailedException", "TransactionCanceledException"}

ORIGIN: ContextVar[str] = ContextVar("edgecron_bench_origin", default="unattributed")


@dataclass
class Invocation:
    """One Lambda invocation as the meter saw it; `records` is the SQS batch size (1 otherwise)."""

    function: str
    records: int = 1
    wall_s: float = 0.0
    aws_calls: int = 0
    aws_s: float = 0.0  # inside AWS calls: botocore + the service (moto)
    client_s: float = 0.0  # botocore's own share: serialize, sign, parse
    cpu_s: float = 0.0  # CPU time of the process while it ran (every thread: moto's too)
    service_cpu_s: float = 0.0  # CPU time the service (moto) took inside the calls, on their threads
    calls_by_service: dict[str, int] = field(default_factory=dict)


INVOCATION: ContextVar[Invocation | None] = ContextVar("edgecron_bench_invocation", default=None)


@dataclass
class OpStats:
    requests: int = 0
    sqs_chunks: int = 0
    wru_table: float = 0.0
    wru_index: float = 0.0
    rru: float = 0.0
    moto_units: float = 0.0  # ConsumedCapacity as moto reported it
    stored_bytes: int = 0
    estimated_reads: int = 0  # queries whose filtered-out items were sized by estimate

    @property
    def wru(self) -> float:
        return self.wru_table + self.wru_index

    def add(self, other: OpStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


OpKey = tuple[str, str, str, str]  # origin, service, operation, resource


@dataclass
class Usage:
    """What one measured window consumed."""

    ops: dict[OpKey, OpStats] = field(default_factory=dict)
    invocations: list[Invocation] = field(default_factory=list)
    log_bytes: int = 0

    def total(self, service: str | None = None, origin: str | None = None) -> OpStats:
        out = OpStats()
        for (o, s, _, _), stats in self.ops.items():
            if (service is None or s == service) and (origin is None or o == origin):
                out.add(stats)
        return out


@dataclass
class _Call:
    origin: str
    service: str
    operation: str
    resource: str
    params: Mapping[str, Any]
    invocation: Invocation | None
    t0: float
    t_send: float | None = None
    t_recv: float | None = None
    cpu_send: float | None = None  # the calling thread's CPU time when the request left botocore
    cpu_recv: float | None = None
    done: bool = False
    old: list[tuple[dynamo.TableSchema, dict[str, Any], dict[str, Any] | None, str]] = field(
        default_factory=list
    )


class CountingStream(io.TextIOBase):
    """A write-only text stream that keeps only the number of bytes written (the log volume)."""

    def __init__(self) -> None:
        self.bytes = 0
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        with self._lock:
            self.bytes += len(s.encode())
        return len(s)


class Meter:
    """Accumulates AWS usage while active; `window()` measures one stretch of a benchmark."""

    def __init__(
        self, tables: Mapping[str, dynamo.TableSchema], queues: Mapping[str, str], peek: Peek | None
    ) -> None:
        self.tables = dict(tables)  # physical table name -> schema
        self.queues = dict(queues)  # queue URL -> logical id
        self.peek = peek
        self.usage = Usage()
        self.logs = CountingStream()
        self._lock = threading.Lock()

    @contextmanager
    def window(self) -> Iterator[Usage]:
        """Measure from here to the end of the block; the Usage is complete once the block exits."""
        global _ACTIVE
        install()
        self.usage = Usage()
        self.logs = CountingStream()
        _ACTIVE = self
        try:
            yield self.usage
        finally:
            _ACTIVE = None
            self.usage.log_bytes = self.logs.bytes

    def record_invocation(self, invocation: Invocation) -> None:
        """Keep an invocation of the current window (setup work outside a window is not counted)."""
        if _ACTIVE is self:
            with self._lock:
                self.usage.invocations.append(invocation)

    # -- call tracking -----------------------------------------------------------------------------

    def start(self, model: Any, params: Mapping[str, Any]) -> _Call:
        service = str(model.service_model.service_name)
        operation = str(model.name)
        call = _Call(
            origin=ORIGIN.get(),
            service=service,
            operation=operation,
            resource=self._resource(service, params),
            params=params,
            invocation=INVOCATION.get(),
            t0=time.perf_counter(),
        )
        if service == "dynamodb" and operation in _WRITE_OPS:
            call.old = self._before_writes(operation, params)
        return call

    def finish(self, call: _Call, status: int, parsed: Mapping[str, Any]) -> None:
        t1 = time.perf_counter()
        stats = OpStats(requests=1)
        origin = call.origin
        if call.service == "sqs":
            stats.sqs_chunks = _sqs_chunks(call.operation, call.params, parsed)
            if call.operation == "ReceiveMessage" and not parsed.get("Messages"):
                origin = IDLE_POLL
        elif call.service == "dynamodb":
            self._dynamodb(call, status, parsed, stats)
        with self._lock:
            key = (origin, call.service, call.operation, call.resource)
            self.usage.ops.setdefault(key, OpStats()).add(stats)
            inv = call.invocation
            if inv is not None:
                inv.aws_calls += 1
                inv.aws_s += t1 - call.t0
                if call.t_send is not None and call.t_recv is not None:
                    inv.client_s += (call.t_send - call.t0) + (t1 - call.t_recv)
                if call.cpu_send is not None and call.cpu_recv is not None:
                    inv.service_cpu_s += max(0.0, call.cpu_recv - call.cpu_send)
                inv.calls_by_service[call.service] = inv.calls_by_service.get(call.service, 0) + 1

    def _resource(self, service: str, params: Mapping[str, Any]) -> str:
        if service == "dynamodb":
            name = params.get("TableName")
            if name is None:
                batch = params.get("RequestItems") or {}
                name = next(iter(batch), None)
            if name is None and params.get("TransactItems"):
                first = next(iter(params["TransactItems"][0].values()))
                name = first.get("TableName")
            schema = self.tables.get(str(name))
            return schema.logical_id if schema else str(name or "")
        if service == "sqs":
            return self.queues.get(str(params.get("QueueUrl", "")), "")
        return ""

    # -- DynamoDB capacity ---------------------------------------------------------------------------

    def _peek(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        if self.peek is None:
            return None
        try:
            return self.peek(table, key)
        except Exception:
            return None

    def _before_writes(
        self, operation: str, params: Mapping[str, Any]
    ) -> list[tuple[dynamo.TableSchema, dict[str, Any], dict[str, Any] | None, str]]:
        """(schema, key, old item, kind) for every item the write touches; kind: put, update, delete, check."""
        targets: list[tuple[str, dict[str, Any], str, Mapping[str, Any] | None]] = []
        if operation == "PutItem":
            targets.append((params["TableName"], {}, "put", params["Item"]))
        elif operation in ("UpdateItem", "DeleteItem"):
            kind = "update" if operation == "UpdateItem" else "delete"
            targets.append((params["TableName"], dict(params["Key"]), kind, None))
        elif operation == "BatchWriteItem":
            for table, requests in (params.get("RequestItems") or {}).items():
                for request in requests:
                    if "PutRequest" in request:
                        targets.append((table, {}, "put", request["PutRequest"]["Item"]))
                    else:
                        targets.append((table, dict(request["DeleteRequest"]["Key"]), "delete", None))
        elif operation == "TransactWriteItems":
            for entry in params.get("TransactItems") or []:
                ((kind, body),) = entry.items()
                kind = {"Put": "put", "Update": "update", "Delete": "delete"}.get(kind, "check")
                targets.append((body["TableName"], dict(body.get("Key") or {}), kind, body.get("Item")))
        out = []
        for table, key, kind, item in targets:
            schema = self.tables.get(table)
            if schema is None:
                continue
            if item is not None:
                key = schema.key_of(item)
            out.append((schema, key, self._peek(table, key), kind))
        return out

    def _dynamodb(self, call: _Call, status: int, parsed: Mapping[str, Any], stats: OpStats) -> None:
        consumed = parsed.get("ConsumedCapacity")
        for entry in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
            stats.moto_units += float(entry.get("CapacityUnits") or 0)
        error = str((parsed.get("Error") or {}).get("Code") or "") if status >= 300 else ""
        op, params = call.operation, call.params
        factor = 2 if op.startswith("Transact") else 1
        if op in _WRITE_OPS:
            if error in _CONDITION_ERRORS:
                for _, _, old, _ in call.old[:1] if op != "TransactWriteItems" else call.old:
                    stats.wru_table += factor * dynamo.failed_condition_cost(old).table
                return
            if error:
                return
            puts = _put_items(op, params)
            for i, (schema, key, old, kind) in enumerate(call.old):
                if kind == "check":
                    stats.wru_table += factor * dynamo.failed_condition_cost(old).table
                    continue
                new: Mapping[str, Any] | None
                if kind == "put":
                    new = puts[i] if i < len(puts) else None
                elif kind == "delete":
                    new = None
                else:
                    new = self._peek(schema.name, key)
                cost = dynamo.change_cost(schema, old, new)
                stats.wru_table += factor * cost.table
                stats.wru_index += factor * sum(cost.indexes.values())
                stats.stored_bytes += cost.stored_bytes
            return
        if error:
            return
        if op == "GetItem":
            full = self._peek(str(params["TableName"]), params["Key"]) or parsed.get("Item")
            stats.rru += dynamo.read_units(dynamo.item_size(full), bool(params.get("ConsistentRead")))
        elif op == "BatchGetItem":
            for table, request in (params.get("RequestItems") or {}).items():
                found = (parsed.get("Responses") or {}).get(table) or []
                consistent = bool(request.get("ConsistentRead"))
                stats.rru += sum(dynamo.read_units(dynamo.item_size(i), consistent) for i in found)
                missing = max(0, len(request.get("Keys") or []) - len(found))
                stats.rru += missing * dynamo.read_units(0, consistent)
        elif op in ("Query", "Scan"):
            items = parsed.get("Items") or []
            size = sum(dynamo.item_size(i) for i in items)
            filtered = int(parsed.get("ScannedCount", len(items))) - int(parsed.get("Count", len(items)))
            if filtered > 0:
                average = size / len(items) if items else dynamo.WRITE_UNIT_BYTES
                size += int(filtered * average)
                stats.estimated_reads += 1
            consistent = bool(params.get("ConsistentRead")) and not params.get("IndexName")
            stats.rru += dynamo.read_units(size, consistent)
        elif op == "TransactGetItems":
            for entry in params.get("TransactItems") or []:
                body = entry["Get"]
                full = self._peek(str(body["TableName"]), body["Key"])
                stats.rru += 2 * dynamo.read_units(dynamo.item_size(full), True)


def _put_items(operation: str, params: Mapping[str, Any]) -> list[Mapping[str, Any] | None]:
    """The new items of a write's puts, aligned with Meter._before_writes' targets."""
    if operation == "PutItem":
        return [params["Item"]]
    if operation == "BatchWriteItem":
        return [
            r["PutRequest"]["Item"] if "PutRequest" in r else None
            for requests in (params.get("RequestItems") or {}).values()
            for r in requests
        ]
    if operation == "TransactWriteItems":
        return [next(iter(e.values())).get("Item") for e in params.get("TransactItems") or []]
    return [None]


def _sqs_chunks(operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> int:
    """SQS bills each 64 KB chunk of a request's payload as one request (a batch of 10 small messages is one)."""

    def attributes_size(attributes: Mapping[str, Any] | None) -> int:
        total = 0
        for name, value in (attributes or {}).items():
            total += len(name) + len(str(value.get("DataType", "")))
            total += len(str(value.get("StringValue", "")).encode()) + len(
                value.get("BinaryValue", b"") or b""
            )
        return total

    size = 0
    if operation == "SendMessage":
        size = len(str(params.get("MessageBody", "")).encode()) + attributes_size(
            params.get("MessageAttributes")
        )
    elif operation == "SendMessageBatch":
        for entry in params.get("Entries") or []:
            size += len(str(entry.get("MessageBody", "")).encode()) + attributes_size(
                entry.get("MessageAttributes")
            )
    elif operation == "ReceiveMessage":
        for message in parsed.get("Messages") or []:
            size += len(str(message.get("Body", "")).encode()) + attributes_size(
                message.get("MessageAttributes")
            )
    return max(1, math.ceil(size / SQS_CHUNK_BYTES))


# -- botocore handlers (module-level so the registered callables are stable) ------------------------------

_ACTIVE: Meter | None = None
_INSTALLED = False
_INSTALL_LOCK = threading.Lock()


def _on_params(params: Any = None, model: Any = None, context: Any = None, **_: Any) -> None:
    meter = _ACTIVE
    if meter is None or context is None or model is None or _CONTEXT_KEY in context:
        return
    if model.service_model.service_name == "dynamodb" and "ReturnConsumedCapacity" in getattr(
        model.input_shape, "members", {}
    ):
        params.setdefault("ReturnConsumedCapacity", "TOTAL")
    context[_CONTEXT_KEY] = meter.start(model, params)


def _on_send(request: Any = None, **_: Any) -> None:
    call = (getattr(request, "context", None) or {}).get(_CONTEXT_KEY)
    if call is not None and call.t_send is None:
        call.t_send = time.perf_counter()
        call.cpu_send = time.thread_time()


def _on_received(context: Any = None, **_: Any) -> None:
    call = (context or {}).get(_CONTEXT_KEY)
    if call is not None and call.t_recv is None:
        call.t_recv = time.perf_counter()
        call.cpu_recv = time.thread_time()


def _on_after_call(http_response: Any = None, parsed: Any = None, context: Any = None, **_: Any) -> None:
    call = (context or {}).get(_CONTEXT_KEY)
    meter = _ACTIVE
    if call is None or call.done or meter is None:
        return
    call.done = True
    meter.finish(call, int(getattr(http_response, "status_code", 200)), parsed or {})


def _on_call_error(context: Any = None, **_: Any) -> None:
    call = (context or {}).get(_CONTEXT_KEY)
    meter = _ACTIVE
    if call is None or call.done or meter is None:
        return
    call.done = True
    meter.finish(call, 599, {"Error": {"Code": "NetworkError"}})


_HANDLERS: list[tuple[str, Callable[..., None], bool]] = [
    ("before-parameter-build", _on_params, False),
    ("before-send", _on_send, True),  # first: moto's stubber answers in before-send
    ("response-received", _on_received, False),
    ("after-call", _on_after_call, False),
    ("after-call-error", _on_call_error, False),
]


def install() -> None:
    """Put the handlers on every botocore client and session, present and future (idempotent)."""
    global _INSTALLED
    with _INSTALL_LOCK:
        if not _INSTALLED:
            for event, handler, first in _HANDLERS:
                spec: tuple[Any, ...] = (
                    (event, handler, botocore.handlers.REGISTER_FIRST) if first else (event, handler)
                )
                botocore.handlers.BUILTIN_HANDLERS.append(spec)
            _INSTALLED = True
        for obj in gc.get_objects():
            if isinstance(obj, botocore.client.BaseClient):
                _register(obj.meta.events)
            elif isinstance(obj, botocore.session.Session):
                _register(obj.get_component("event_emitter"))


def _register(emitter: Any) -> None:
    for event, handler, first in _HANDLERS:
        unique_id = f"edgecron-bench-{event}"
        if first:
            emitter.register_first(event, handler, unique_id=unique_id)
        else:
            emitter.register(event, handler, unique_id=unique_id)
