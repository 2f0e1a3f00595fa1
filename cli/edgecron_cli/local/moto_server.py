"""moto in server mode inside the stack's process, and the environment the handlers need to reach it."""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.utilities import dynamo_json_dump
from moto.kms.models import kms_backends
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from edgecron_cli.local.intrinsics import ACCOUNT_ID, REGION

HOST = "127.0.0.1"
DEFAULT_AWS_PORT = 4567

# What the local stack changes from the deployed configuration (docs/local-stack.md explains each).
LOCAL_OVERRIDES = {
    "ALLOWED_CIDRS": "127.0.0.0/8,::1/128",
    "ALLOW_HTTP": "true",
    "ALLOWED_ONLY": "true",  # the local stack reaches loopback receivers and nothing else
    # a lost message is noticed after a minute locally (5 min on AWS); tests may shorten it
    "REDISPATCH_AFTER_SEC": os.environ.get("EDGECRON_LOCAL_REDISPATCH_AFTER_SEC", "60"),
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


class _WriteTracker:
    """WSGI middleware: bump the counter on every DynamoDB or Secrets Manager call that is not a read,
    and let moto answer one call at a time. DynamoDB applies each conditional write atomically; moto
    does not within one call, so two workers claiming the same run at once could both win."""

    def __init__(self, app: Callable[..., Iterable[bytes]], changes: ChangeCounter) -> None:
        self._app = app
        self._changes = changes
        self._atomic = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        for prefix in _STATEFUL_TARGETS:
            if target.startswith(prefix) and not target[len(prefix) :].startswith(_READ_ACTIONS):
                self._changes.bump()
        if environ.get("QUERY_STRING", "").startswith("Action=ReceiveMessage") or "ReceiveMessage" in target:
            return self._app(environ, start_response)  # long polls must not hold the lock
        with self._atomic:
            return list(self._app(environ, start_response))


class LocalMotoServer(ThreadedMotoServer):
    """ThreadedMotoServer with the write tracker in front of moto's WSGI app."""

    def __init__(self, port: int) -> None:
        super().__init__(ip_address=HOST, port=port, verbose=False)
        self.changes = ChangeCounter()

    def _server_entry(self) -> None:
        app = _WriteTracker(DomainDispatcherApplication(create_backend_app), self.changes)
        try:
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
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


def start_moto(port: int = DEFAULT_AWS_PORT) -> LocalMotoServer:
    """Start moto on 127.0.0.1:`port` (0 picks a free port); its per-request log lines are silenced."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = LocalMotoServer(port)
    server.start()
    if not server.listening:
        raise OSError(errno.EADDRINUSE, "address in use")
    return server


def table_items(table_name: str) -> list[dict[str, Any]]:
    """Every item of a table in DynamoDB JSON, read from moto's backend in this process.

    A Scan through the API costs moto about 1 ms per item, too slow to snapshot every few seconds.
    """
    table = dynamodb_backends[ACCOUNT_ID][REGION].get_table(table_name)
    while True:
        try:
            items = [item.to_json()["Attributes"] for item in table.all_items()]
        except RuntimeError:  # a handler changed the table while it was read: read it again
            continue
        document: list[dict[str, Any]] = json.loads(dynamo_json_dump(items))
        return document


def put_items(table_name: str, items: list[dict[str, Any]]) -> None:
    """Put items given in DynamoDB JSON straight into moto's backend (as fast as `table_items`)."""
    backend = dynamodb_backends[ACCOUNT_ID][REGION]
    for item in items:
        backend.put_item(table_name, item)


def kms_key_material(key_id: str) -> bytes:
    """The material moto encrypts with for a key (moto runs in this process, so it can be read)."""
    return bytes(kms_backends[ACCOUNT_ID][REGION].keys[key_id].key_material)


def import_kms_key(key_id: str, material: bytes, description: str) -> None:
    """Recreate a symmetric key under its old id and material.

    moto's ciphertexts name their key id, and KMS has no API to choose an id or import material for
    a symmetric key, so this goes through moto's backend: without it, whatever the handlers encrypted
    (Endpoint signing secrets) could not be decrypted after a restart.
    """
    backend = kms_backends[ACCOUNT_ID][REGION]
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
