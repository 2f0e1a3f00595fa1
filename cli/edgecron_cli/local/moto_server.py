"""moto's side of the local stack: its HTTP server behind the gate, the queue waiter, the snapshot reads
and writes and the KMS key export and import, all run in moto's process (moto_process.py); and the
environment the handlers need to reach it."""

from __future__ import annotations

import base64
import errno
import io
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from botocore.exceptions import ClientError
from moto import backend_index, backends
from moto.core.request import Request
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.kms.models import kms_backends
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.sqs.models import sqs_backends
from werkzeug.exceptions import HTTPException
from werkzeug.serving import make_server

from edgecron_cli.local import moto_patches, moto_speedups, moto_transactions
from edgecron_cli.local.intrinsics import ACCOUNT_ID, REGION
from edgecron_cli.local.journal import DYNAMODB_PREFIX, WRITE_ACTIONS, Journal, items_written

log = logging.getLogger("edgecron_cli.local")

HOST = "127.0.0.1"
DEFAULT_AWS_PORT = 4567

# What the local stack changes from the deployed configuration (docs/local-stack.md explains each).
LOCAL_OVERRIDES = {
    "ALLOWED_CIDRS": "127.0.0.0/8,::1/128",
    "ALLOW_HTTP": "true",
    "ALLOWED_ONLY": "true",  # the local stack reaches loopback receivers and nothing else
    # a lost message is noticed after a minute locally (5 min on AWS); tests may shorten it
    "REDISPATCH_AFTER_SEC": os.environ.get("EDGECRON_LOCAL_REDISPATCH_AFTER_SEC", "60"),
    # how long a worker's claim holds (template: 60 s); tests of a killed worker shorten it
    "CLAIM_SEC": os.environ.get("EDGECRON_LOCAL_CLAIM_SEC", "60"),
}
_STATEFUL_TARGETS = ("DynamoDB_20120810.", "secretsmanager.")
_READ_ACTIONS = ("Get", "BatchGet", "Query", "Scan", "Describe", "List", "TransactGet")


class ChangeCounter:
    """Counts calls that may change snapshotted state, so an idle stack does not rewrite its snapshot."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0

    def bump(self) -> None:
        with self._lock:
            self._value += 1

    @property
    def value(self) -> int:
        return self._value


_T = TypeVar("_T")


class MotoGate:
    """What every call to moto goes through, over HTTP or the stack's socket: change counting, atomicity
    and the journal.

    DynamoDB applies each conditional write atomically; moto does not within one call, so two workers
    claiming the same run at once could both win. So moto answers one call at a time, except
    ReceiveMessage: a long poll must not hold the others up (and SQS may deliver a message twice anyway).
    A DynamoDB write that succeeded is in the journal (journal.py), if there is one, before it is answered.
    """

    def __init__(self, journal: Journal | None = None) -> None:
        self.changes = ChangeCounter()
        self.journal = journal
        self._atomic = threading.Lock()

    def call(
        self,
        target: str,
        operation: str,
        answer: Callable[[], _T],
        body: bytes | None = None,
        status: Callable[[_T], int] | None = None,
    ) -> _T:
        """Run `answer` (moto handling one request) under the rules; `target` is the X-Amz-Target header,
        `body` the request's and `status` reads the answer's HTTP status (for the journal)."""
        for prefix in _STATEFUL_TARGETS:
            if target.startswith(prefix) and not target[len(prefix) :].startswith(_READ_ACTIONS):
                self.changes.bump()
        if operation == "ReceiveMessage":
            return answer()
        with self._atomic:
            result = answer()
            action = target[len(DYNAMODB_PREFIX) :] if target.startswith(DYNAMODB_PREFIX) else ""
            journaled = self.journal is not None and body is not None and action in WRITE_ACTIONS
            if journaled and (status is None or status(result) == 200):
                self._journal(action, body or b"")
            return result

    def _journal(self, action: str, body: bytes) -> None:
        """Append the images of the items the write changed; a failure here is the call's failure (its
        change is applied, but would not survive a crash, so it must not be acknowledged)."""
        assert self.journal is not None
        try:
            written = items_written(action, json.loads(body), _key_names)
            self.journal.append([(table, key, item_image(table, key)) for table, key in written])
        except Exception:
            log.exception("the journal could not record a %s: the call fails", action)
            raise


def _key_names(table_name: str) -> list[str]:
    table = dynamodb_backends[ACCOUNT_ID][REGION].get_table(table_name)
    return [name for name in (table.hash_key_attr, table.range_key_attr) if name is not None]


def item_image(table_name: str, key: dict[str, Any]) -> dict[str, Any] | None:
    """The item with this key (DynamoDB JSON) as moto holds it, in DynamoDB JSON; None if there is none."""
    table = dynamodb_backends[ACCOUNT_ID][REGION].get_table(table_name)
    hash_value = DynamoType(key[table.hash_key_attr])
    range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    partition = table.items.get(hash_value)
    if partition is None:
        return None
    item: Any = partition.get(range_value) if range_value is not None else partition
    if item is None:
        return None
    return {name: plain_dynamo_json(value) for name, value in item.attrs.items()}


def apply_images(images: list[tuple[str, dict[str, Any], dict[str, Any] | None]]) -> int:
    """Put back (or delete) each item as the journal saw it last, in order, straight into moto's backend;
    the number applied (images of tables the template no longer has are skipped)."""
    backend = dynamodb_backends[ACCOUNT_ID][REGION]
    applied = 0
    skipped: set[str] = set()
    for table_name, key, item in images:
        if table_name not in backend.tables:
            skipped.add(table_name)
            continue
        if item is not None:
            backend.put_item(table_name, item)
        else:
            table = backend.get_table(table_name)
            range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            table.delete_item(DynamoType(key[table.hash_key_attr]), range_value)
        applied += 1
    for table_name in sorted(skipped):
        log.warning("journal: table %s is no longer in the template; its writes are dropped", table_name)
    return applied


class _WriteTracker:
    """WSGI middleware: moto's HTTP server goes through the gate (for the AWS CLI, tests, other processes)."""

    def __init__(self, app: Callable[..., Iterable[bytes]], gate: MotoGate) -> None:
        self._app = app
        self._gate = gate

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        query = str(environ.get("QUERY_STRING", ""))
        operation = target.rpartition(".")[2] if target else _query_action(query)
        if not (target.startswith(DYNAMODB_PREFIX) and operation in WRITE_ACTIONS):
            return self._gate.call(target, operation, lambda: list(self._app(environ, start_response)))
        length = int(environ.get("CONTENT_LENGTH") or 0)  # a write: its body goes to the journal too
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        environ["wsgi.input"] = io.BytesIO(body)
        answered: list[int] = []

        def start(status: str, headers: Any, exc_info: Any = None) -> Any:
            answered.append(int(status.split()[0]))
            return start_response(status, headers, exc_info)

        return self._gate.call(
            target,
            operation,
            lambda: list(self._app(environ, start)),
            body,
            lambda _: answered[0] if answered else 500,
        )


def _query_action(query: str) -> str:
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if name == "Action":
            return value
    return ""


class _NoDelayRequestHandler(MotoRequestHandler):
    """Werkzeug writes a response's headers and body in two sends: without TCP_NODELAY, a keep-alive
    client (botocore) waits for a delayed ACK, about 40 ms on Linux, on every call."""

    disable_nagle_algorithm = True


_Route = tuple["re.Pattern[str]", Callable[[Any, str, Any], Any]]
Answer = tuple[int, list[tuple[str, str]], bytes]


def routes(signing_name: str) -> list[_Route]:
    """moto's URL paths and handlers of the service that signs as `signing_name` (none if unknown)."""
    host = f"https://{signing_name}.{REGION}.amazonaws.com"
    for service, pattern in backend_index.backend_url_patterns:
        if pattern.match(host):
            backend = backends.get_backend(service)[ACCOUNT_ID][REGION]  # type: ignore[call-overload]
            return [(re.compile(path), handler) for path, handler in backend.url_paths.items()]
    return []


def answer(
    handler: Callable[[Any, str, Any], Any], method: str, url: str, headers: dict[str, str], body: bytes
) -> Answer:
    """What moto's Flask app would answer this request with, as plain values: moto's errors are
    responses, any other exception a 500."""
    request = Request.from_primitives(method, url, headers, body)
    try:
        result = handler(request, request.raw_url, dict(request.headers))
    except HTTPException as exc:
        return int(exc.code or 500), _plain_headers(exc.get_headers()), _bytes(exc.get_body())  # type: ignore[call-arg]
    except ClientError as exc:
        return 400, [], _bytes(exc.response["Error"]["Message"])
    except Exception:
        log.exception("moto failed to answer %s", url)
        return 500, [], b"Internal Server Error"
    if len(result) == 3:
        status, out_headers, out_body = result
        return int(status), _plain_headers(out_headers), _bytes(out_body)
    return 200, [], _bytes(result)


def _plain_headers(headers: Any) -> list[tuple[str, str]]:
    pairs = headers.items() if hasattr(headers, "items") else headers or []
    return [(str(name), str(value)) for name, value in pairs]


def _bytes(body: Any) -> bytes:
    if body is None:
        return b""
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


class LocalMotoServer(ThreadedMotoServer):
    """ThreadedMotoServer with the gate in front of moto's WSGI app."""

    def __init__(self, port: int, journal: Journal | None = None) -> None:
        super().__init__(ip_address=HOST, port=port, verbose=False)
        self.gate = MotoGate(journal)
        self.changes = self.gate.changes

    def _server_entry(self) -> None:
        shapes = [(ThreadedMotoServer, "_server_entry"), (self, "_server_ready_event"), (self, "_ip_address")]
        if not moto_patches.applies("the gate in front of moto's HTTP server", shapes):
            super()._server_entry()  # other processes' calls then reach moto ungated
            return
        app = _WriteTracker(DomainDispatcherApplication(create_backend_app), self.gate)
        try:
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=_NoDelayRequestHandler
            )
        finally:  # werkzeug exits the thread when the port is taken: never leave start() waiting
            self._server_ready_event.set()
        self._server.serve_forever()

    @property
    def listening(self) -> bool:
        return self._server is not None

    @property
    def endpoint_url(self) -> str:
        host, port = self.get_host_and_port()
        return f"http://{host}:{port}"


def start_moto(port: int = DEFAULT_AWS_PORT, journal: Journal | None = None) -> LocalMotoServer:
    """Start moto on 127.0.0.1:`port` (0 picks a free port) with the emulator's work-arounds, writing
    DynamoDB's changes to `journal` if given; its per-request log lines are silenced. moto's process
    (moto_process.py) runs it."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    moto_speedups.install()
    moto_transactions.install()
    server = LocalMotoServer(port, journal)
    server.start()
    if not server.listening:
        raise OSError(errno.EADDRINUSE, "address in use")
    return server


class QueueWaiter:
    """Tells an SQS poller when a message of a queue can be received, by watching moto's queue in its
    process (the stack's pollers ask through moto_process.RemoteQueueWaiter).

    moto's long poll wakes only when a message is sent, not when a delayed or in-flight one becomes
    visible, and every waiting poll rescans the queue on every message sent. Pollers wait here instead:
    on moto's own condition (notified on every send), with a timeout set to the moment the next delayed
    or in-flight message becomes visible. Receiving still goes through ReceiveMessage.
    """

    def __init__(self, queue_url: str) -> None:
        self._name = queue_url.rstrip("/").rpartition("/")[2]

    def wait(self, timeout: float) -> bool | None:
        """True as soon as a message is visible; False after `timeout` s without one; None if the queue
        cannot be watched (then the poller long-polls)."""
        queue = sqs_backends[ACCOUNT_ID][REGION].queues.get(self._name)
        if queue is None:
            return None
        if not moto_patches.applies("SQS pollers wait on moto's queue", [(queue, "_messages_lock")]):
            return None
        deadline = time.monotonic() + timeout
        with queue._messages_lock:
            while True:
                ready_at = _next_visible_ms(queue._messages)
                now_ms = time.time() * 1000
                if ready_at is not None and ready_at < now_ms:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                if ready_at is not None:  # wake just after it becomes visible (moto compares with >)
                    remaining = min(remaining, (ready_at - now_ms) / 1000 + 0.002)
                queue._messages_lock.wait(remaining)


def _next_visible_ms(messages: list[Any]) -> float | None:
    """When the first of these moto messages is (or was) visible and not delayed, in Unix ms."""
    ready: float | None = None
    for message in list(messages):
        at = max(message.visible_at, message.delayed_until)
        if ready is None or at < ready:
            ready = at
    return ready


def table_items(table_name: str) -> list[dict[str, Any]]:
    """Every item of a table in DynamoDB JSON, read from moto's backend in this process.

    A Scan through the API costs moto about 1 ms per item, too slow to snapshot every few seconds.
    """
    table = dynamodb_backends[ACCOUNT_ID][REGION].get_table(table_name)
    while True:
        try:
            return [
                {name: plain_dynamo_json(value) for name, value in item.attrs.items()}
                for item in table.all_items()
            ]
        except RuntimeError:  # a handler changed the table while it was read: read it again
            continue


def partition_items(table_name: str, hash_value: str) -> list[dict[str, Any]]:
    """The items of one partition (string hash key) of a table with a sort key, in sort key order,
    in DynamoDB JSON, read from moto's backend in this process: a test's own look at a partition
    without a Query's parsing and serialising (about 10 ms a call in moto)."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    table = dynamodb_backends[ACCOUNT_ID][REGION].get_table(table_name)
    while True:
        try:
            found = table.items.get(DynamoType({"S": hash_value}), {})
            items = [found[key] for key in sorted(found)]
            return [{name: plain_dynamo_json(value) for name, value in item.attrs.items()} for item in items]
        except RuntimeError:  # a handler changed the partition while it was read: read it again
            continue


def item_by_sort_key(table_name: str, sort_value: str) -> dict[str, Any] | None:
    """The first item (in no set order) of a table with a string sort key whose sort key is
    `sort_value`, whatever its partition, in DynamoDB JSON, read from moto's backend in this process:
    a test's look-up of an item it knows only by a unique sort key, without a Scan's copies."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    table = dynamodb_backends[ACCOUNT_ID][REGION].get_table(table_name)
    wanted = DynamoType({"S": sort_value})
    while True:
        try:
            for partition in table.items.values():
                item = partition.get(wanted)
                if item is not None:
                    return {name: plain_dynamo_json(value) for name, value in item.attrs.items()}
            return None
        except RuntimeError:  # a handler changed the table while it was read: read it again
            continue


def plain_dynamo_json(value: Any) -> Any:
    """One of moto's attribute values (a DynamoType) as DynamoDB JSON, binary in base64: what
    `json.loads(dynamo_json_dump(item.to_json()))` gives, without its deep copies and JSON round trip
    (those were most of a snapshot's CPU, and a snapshot holds the GIL while it runs)."""
    inner = value.value
    if type(inner) is dict:
        return {value.type: {name: plain_dynamo_json(member) for name, member in inner.items()}}
    if type(inner) is list:
        return {value.type: [_plain_member(member) for member in inner]}
    if type(inner) is bytes:
        return {value.type: base64.b64encode(inner).decode("ascii")}
    return {value.type: inner}


def _plain_member(member: Any) -> Any:
    if isinstance(member, DynamoType):
        return plain_dynamo_json(member)
    if type(member) is bytes:  # a member of a binary set
        return base64.b64encode(member).decode("ascii")
    return member


def put_items(table_name: str, items: list[dict[str, Any]]) -> None:
    """Put items given in DynamoDB JSON straight into moto's backend (as fast as `table_items`)."""
    backend = dynamodb_backends[ACCOUNT_ID][REGION]
    for item in items:
        backend.put_item(table_name, item)


def kms_key_material(key_id: str) -> bytes:
    """The material moto encrypts with for a key (read where moto runs)."""
    return bytes(kms_backends[ACCOUNT_ID][REGION].keys[key_id].key_material)


def import_kms_key(key_id: str, material: bytes, description: str) -> None:
    """Recreate a symmetric key under its old id and material.

    moto's ciphertexts name their key id, and KMS has no API to choose an id or import material for
    a symmetric key, so this goes through moto's backend: without it, whatever the handlers encrypted
    (Endpoint signing secrets) could not be decrypted after a restart.
    """
    backend = kms_backends[ACCOUNT_ID][REGION]
    if not moto_patches.applies("KMS keys keep their id and material across restarts", [(backend, "keys")]):
        return  # what was encrypted before the restart cannot be decrypted
    if key_id in backend.keys:
        return
    key = backend.create_key(
        policy=None,
        key_usage="ENCRYPT_DECRYPT",
        key_spec="SYMMETRIC_DEFAULT",
        description=description,
        tags=None,
    )
    del backend.keys[key.id]
    key.id = key_id
    key.arn = f"arn:aws:kms:{REGION}:{ACCOUNT_ID}:key/{key_id}"
    key.key_material = material
    backend.keys[key_id] = key


def handler_environment(endpoint_url: str, provisioned: dict[str, str], verbose: bool) -> dict[str, str]:
    """The process environment for the handlers: moto's endpoint, the template's variables, local overrides.

    It must be applied before any handler is imported, because the core package reads it at import.
    """
    return {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        **provisioned,
        **LOCAL_OVERRIDES,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "INFO" if verbose else "WARNING",
        # EMF metric lines would flood stdout on every invocation; --verbose shows them.
        "POWERTOOLS_METRICS_DISABLED": "false" if verbose else "true",
    }
