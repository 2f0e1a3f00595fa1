"""moto in a process of its own, and the transport between it and the stack's process (both ends).

The handlers and moto shared one process, so one core (the GIL) ran both while the other idled. moto
now runs in a child process with everything that must sit beside its state: the gate (atomicity and
change counting), the speedups, the transaction and other work-arounds, the queue waiter, the
snapshot reads and writes and the KMS key export and import (`serve`, at the bottom). The stack's
process keeps the handlers, the gateway, the pollers and the botocore hooks (IAM, AWS fidelity);
`MotoProcess` starts, watches and stops the child and calls into it.

The handlers' calls do not go over HTTP: werkzeug and Flask per call were most of the stack's CPU
before. A `before-send` hook (`BotocoreTransport`) sends the request as botocore prepared it (method,
URL, headers, body, operation) over a Unix-domain socket, and moto's process routes it and answers it
with moto's handler, under the gate, as its HTTP server would. Each message is a 4-byte length and a
`marshal` of plain values (tuples, str, bytes, numbers, lists, dicts); the socket lives in a
directory only this user can open. moto's HTTP server stays on --aws-port for other processes.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import marshal
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import botocore.auth
import botocore.context
import botocore.handlers
import botocore.useragent
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import EndpointConnectionError

from edgecron_cli.local import moto_patches

log = logging.getLogger("edgecron_cli.local")

MODULE = "edgecron_cli.local.moto_process"
SOCKET_NAME = "moto.sock"
START_TIMEOUT_SEC = 60.0
STOP_TIMEOUT_SEC = 5.0
_LENGTH = struct.Struct("!I")


class MotoCallError(RuntimeError):
    """A call into moto's process raised there; `refused` when it was one of moto's own errors (what
    AWS would answer), not a failure of the emulator."""

    def __init__(self, message: str, refused: bool) -> None:
        super().__init__(message)
        self.refused = refused


# framing (both ends) -----------------------------------------------------------------------------------


def _send(sock: socket.socket, value: Any) -> None:
    data = marshal.dumps(value)
    sock.sendall(_LENGTH.pack(len(data)) + data)


def _receive(sock: socket.socket) -> Any:
    """The next message; EOFError when the other end closed the connection between two messages."""
    (length,) = _LENGTH.unpack(_read_exactly(sock, _LENGTH.size))
    return marshal.loads(_read_exactly(sock, length))  # noqa: S302 - only this user can reach the socket


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    buffer = bytearray(size)
    view = memoryview(buffer)
    read = 0
    while read < size:
        got = sock.recv_into(view[read:])
        if got == 0:
            raise EOFError("moto's process closed the connection")
        read += got
    return bytes(buffer)


# the stack's end ---------------------------------------------------------------------------------------


class Connections:
    """Connections to moto's process, each reused by whichever thread calls next: threads come and go
    (the gateway starts one per HTTP connection), so a connection per thread would be opened per request.

    A call holds its connection until the answer arrives, so calls of different threads run side by side
    (a poller's wait does not hold the others up) and moto's process answers each on its own thread.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._free: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False

    def call(self, kind: str, *args: Any) -> Any:
        """Send one request and wait for its answer. OSError or EOFError when the connection fails (moto's
        process is gone); MotoCallError when the call raised there."""
        with self._lock:
            sock = self._free.pop() if self._free else None
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self._path)
            except OSError:
                sock.close()
                raise
        try:
            _send(sock, (kind, *args))
            reply = _receive(sock)
        except BaseException:
            sock.close()  # the answer may still be on its way: never reuse this connection
            raise
        with self._lock:
            if self._closed:
                sock.close()
            else:
                self._free.append(sock)
        if reply[0]:
            return reply[1]
        raise MotoCallError(reply[2], refused=reply[1])

    def close(self) -> None:
        with self._lock:
            self._closed = True
            free, self._free = self._free, []
        for sock in free:
            sock.close()


_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/,\s]+)/([^/,\s]+)/aws4_request")


class BotocoreTransport:
    """A botocore `before-send` hook: a call to moto's endpoint is sent to moto's process over the socket
    and answered there by moto's handler, through the same gate as an HTTP request.

    moto gets the same request as over HTTP (same URL, headers and body), so queue URLs, regions and
    accounts come out as they would from the server. A call moto's process cannot route (or whose body
    is a stream) goes over HTTP.
    """

    def __init__(self, endpoint_url: str, connections: Connections) -> None:
        self._root = endpoint_url.rstrip("/")
        self._connections = connections
        self.answered = 0  # calls answered over the socket (a test's look; not exact under threads)

    def __call__(
        self, request: AWSPreparedRequest, event_name: str = "", **kwargs: Any
    ) -> AWSResponse | None:
        url = str(request.url)
        if not _under(url, self._root):
            return None
        headers = {str(name): _text(value) for name, value in request.headers.items()}
        scope = _CREDENTIAL_SCOPE.search(headers.get("Authorization", ""))
        body = request.body
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif body is None:
            body = b""
        if scope is None or not isinstance(body, bytes | bytearray):
            return None
        try:
            answer = self._connections.call(
                "aws",
                str(request.method),
                url,
                headers,
                bytes(body),
                event_name.rpartition(".")[2],
                headers.get("X-Amz-Target", ""),
                scope.group(2),
            )
        except (OSError, EOFError) as exc:
            raise EndpointConnectionError(endpoint_url=url, error=exc) from exc
        if answer is None:
            return None
        status, answer_headers, answer_body = answer
        self.answered += 1
        return AWSResponse(url, status, answer_headers, _RawBody(answer_body))  # type: ignore[arg-type]


class _RawBody:
    """The little of urllib3's response that botocore reads from an answer it got in full."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **kwargs: Any) -> Any:
        yield self._body

    def read(self, *args: Any, **kwargs: Any) -> bytes:
        body, self._body = self._body, b""
        return body


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _under(url: str, root: str) -> bool:
    return url == root or url.startswith((root + "/", root + "?"))


class RemoteQueueWaiter:
    """A poller's QueueWaiter (moto_server.py), which watches moto's queue in moto's process."""

    def __init__(self, queue_url: str, connections: Connections) -> None:
        self._queue_url = queue_url
        self._connections = connections

    def wait(self, timeout: float) -> bool | None:
        """True as soon as a message is visible; False after `timeout` s without one; None if the queue
        cannot be watched (then the poller long-polls). A lost moto process is a connection error, which
        the pollers log and retry as they do a failed ReceiveMessage."""
        try:
            visible: bool | None = self._connections.call("wait", self._queue_url, timeout)
        except (OSError, EOFError) as exc:
            raise EndpointConnectionError(endpoint_url=self._queue_url, error=exc) from exc
        return visible


SIGNATURE = "edgecron-local-v4"
UNSIGNED_MARK = "unsigned"  # the Signature of a call to moto's process: nothing checks it


class MotoSigner(botocore.auth.SigV4Auth):  # type: ignore[misc]
    """SigV4 without its hashes, for calls to the stack's moto (about 5 % of the stack's CPU).

    moto never checks a signature; it reads the region and the service from the Authorization header's
    credential scope and the account from its access key, and so does the transport's routing. So a
    call to the stack's moto gets that header with the client's access key, region and signing name,
    and no canonical request, hashes or HMACs. Any other URL is signed as SigV4 signs it.
    """

    endpoint_root: ClassVar[str | None] = None  # the stack's moto, while its hooks are installed

    def add_auth(self, request: Any) -> None:
        root = MotoSigner.endpoint_root
        if root is None or self.credentials is None or not _under(str(request.url), root):
            super().add_auth(request)
            return
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        request.context["timestamp"] = stamp
        headers = request.headers
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            if name in headers:
                del headers[name]
        headers["X-Amz-Date"] = stamp
        if self.credentials.token:
            headers["X-Amz-Security-Token"] = self.credentials.token
        scope = f"{self.credentials.access_key}/{stamp[:8]}/{self._region_name}/{self._service_name}"
        headers["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={scope}/aws4_request, SignedHeaders=host;x-amz-date, "
            f"Signature={UNSIGNED_MARK}"
        )


def choose_moto_signer(
    signature_version: Any = None, context: dict[str, Any] | None = None, **kwargs: Any
) -> Any:
    """`choose-signer` hook, run first: where botocore would sign with SigV4, MotoSigner signs (it still
    signs any URL but the stack's moto's with SigV4). Every other choice is botocore's."""
    chosen = botocore.handlers.set_operation_specific_signer(context=context or {}, **kwargs)
    version = signature_version if chosen is None else chosen
    return SIGNATURE if version == "v4" else chosen


_SIGNER_HOOK = ("choose-signer", choose_moto_signer, botocore.handlers.REGISTER_FIRST)
_SIGNER_SHAPES = [
    (botocore.auth, "AUTH_TYPE_MAPS"),
    (botocore.auth.SigV4Auth, "add_auth"),
    (botocore.handlers, "set_operation_specific_signer"),
    (botocore.handlers, "REGISTER_FIRST"),
]


_USER_AGENT_SHAPES = [
    (botocore.useragent.UserAgentString, "to_string"),
    (botocore.useragent.UserAgentString, "_build_feature_metadata"),
    (botocore.context, "get_context"),
]


def keep_user_agents() -> None:
    """botocore builds each call's User-Agent header twice, sanitizing every part character by character
    (about a third of botocore's own CPU per call, in the stack's process). What it builds depends only on
    the client (its configuration and features, fixed once it exists) and the features the call registered,
    so each client keeps the headers it built, per set of call features."""
    if not moto_patches.applies(
        "botocore keeps the User-Agent headers it built", _USER_AGENT_SHAPES, versioned=False
    ):
        return
    build = botocore.useragent.UserAgentString.to_string
    if getattr(build, "keeps_built", False):
        return

    def to_string(self: Any) -> str:
        context = botocore.context.get_context()
        key = (
            id(self),
            id(self._client_config),
            frozenset(self._client_features or ()),
            frozenset(context.features) if context is not None else frozenset(),
        )
        kept: dict[Any, str] = self.__dict__.setdefault("_kept_user_agents", {})
        built = kept.get(key)
        if built is None:
            built = kept[key] = build(self)
        return built

    to_string.keeps_built = True  # type: ignore[attr-defined]
    to_string.build = build  # type: ignore[attr-defined]
    botocore.useragent.UserAgentString.to_string = to_string  # type: ignore[method-assign]


def read_ready_line(
    stream: Any, process: subprocess.Popen[bytes], timeout_sec: float, name: str
) -> dict[str, Any]:
    """A child process's one JSON line saying it is ready (or why not), read from `stream` within
    `timeout_sec`; {"error": ...} naming `name` when it exits or says nothing in time."""
    found: dict[str, Any] = {}

    def read() -> None:
        line = stream.readline()
        with contextlib.suppress(ValueError):
            found.update(json.loads(line or b"{}"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_sec)
    if not found:
        if not reader.is_alive():  # the stream closed without a line: it is exiting
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_TIMEOUT_SEC)
        status = process.poll()
        found["error"] = (
            f"{name} exited with status {status}"
            if status is not None
            else f"{name} did not start within {timeout_sec:.0f} s"
        )
    return found


class MotoProcess:
    """moto's process, seen from the stack: started by `start`, stopped by `stop` (and with the stack's
    process, whichever way that ends: the child exits when its stdin closes), and watched in between:
    if it exits on its own, `on_exit` is told its status."""

    def __init__(
        self,
        aws_port: int,
        *,
        verbose: bool = False,
        on_exit: Callable[[int], None] | None = None,
        journal: str | None = None,
    ) -> None:
        self._aws_port = aws_port
        self._verbose = verbose
        self._journal = journal
        self._on_exit = on_exit
        self._directory = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._watcher: threading.Thread | None = None
        self._stopping = False
        self._transport: BotocoreTransport | None = None
        self.connections = Connections("")
        self.endpoint_url = ""

    @classmethod
    def attached(cls, socket_path: str, endpoint_url: str) -> MotoProcess:
        """The moto process another process of the stack started (the queue consumers' process reaches
        it this way): calls, waiters and hooks as from the starter, but no start, watch or stop."""
        moto = cls(0)
        moto.endpoint_url = endpoint_url
        moto.connections = Connections(socket_path)
        return moto

    def start(self) -> None:
        """Start moto's process and wait until it serves; OSError(EADDRINUSE) if the port is taken."""
        self._directory = tempfile.mkdtemp(prefix="edgecron-moto-")  # mode 0700: this user's only
        path = os.path.join(self._directory, SOCKET_NAME)
        command = [sys.executable, "-m", MODULE, "--aws-port", str(self._aws_port), "--socket", path]
        if self._journal:
            command += ["--journal", self._journal]
        self._process = subprocess.Popen(
            [*command, *(["--verbose"] if self._verbose else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        ready = self._ready_line()
        if "port" not in ready:
            self.stop()
            raise OSError(
                int(ready.get("errno") or errno.EIO), str(ready.get("error") or "moto did not start")
            )
        self.endpoint_url = f"http://127.0.0.1:{ready['port']}"
        self.connections = Connections(path)
        self._watcher = threading.Thread(target=self._watch, name="moto-process", daemon=True)
        self._watcher.start()

    def _ready_line(self) -> dict[str, Any]:
        """The child's first line: {"port": N} once it serves, {"errno", "error"} if it cannot."""
        assert self._process is not None and self._process.stdout is not None
        return read_ready_line(self._process.stdout, self._process, START_TIMEOUT_SEC, "moto's process")

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def socket_path(self) -> str:
        return os.path.join(self._directory, SOCKET_NAME) if self._directory else ""

    def _watch(self) -> None:
        assert self._process is not None
        status = self._process.wait()
        if not self._stopping:
            log.error("moto's process exited unexpectedly (status %d)", status)
            if self._on_exit is not None:
                self._on_exit(status)

    def serve_botocore(self) -> None:
        """From now on, botocore sessions created in this process send calls to moto over the socket."""
        if self._transport is not None:
            return
        self._transport = BotocoreTransport(self.endpoint_url, self.connections)
        botocore.handlers.BUILTIN_HANDLERS.append(("before-send", self._transport))
        keep_user_agents()
        if moto_patches.applies("calls to the stack's moto skip SigV4's hashes", _SIGNER_SHAPES):
            botocore.auth.AUTH_TYPE_MAPS[SIGNATURE] = MotoSigner
            MotoSigner.endpoint_root = self.endpoint_url
            if _SIGNER_HOOK not in botocore.handlers.BUILTIN_HANDLERS:
                botocore.handlers.BUILTIN_HANDLERS.append(_SIGNER_HOOK)

    @property
    def transport(self) -> BotocoreTransport | None:
        return self._transport

    def stop(self) -> None:
        """Remove the hooks, end moto's process (killed if it does not exit within a few seconds)."""
        self._stopping = True
        if self._transport is not None:
            with contextlib.suppress(ValueError):
                botocore.handlers.BUILTIN_HANDLERS.remove(("before-send", self._transport))
            if MotoSigner.endpoint_root == self.endpoint_url:
                with contextlib.suppress(ValueError):
                    botocore.handlers.BUILTIN_HANDLERS.remove(_SIGNER_HOOK)
                MotoSigner.endpoint_root = None
            self._transport = None
        self.connections.close()
        process = self._process
        if process is not None:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()  # moto's process exits when its stdin closes
            try:
                process.wait(STOP_TIMEOUT_SEC)
            except subprocess.TimeoutExpired:
                log.warning("moto's process did not exit within %.0f s: killed", STOP_TIMEOUT_SEC)
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._watcher is not None:
            self._watcher.join(STOP_TIMEOUT_SEC)
        if self._directory:
            shutil.rmtree(self._directory, ignore_errors=True)

    # what runs beside moto's state --------------------------------------------------------------------

    def changes(self) -> int:
        """How many calls so far may have changed snapshotted state (MotoGate's count)."""
        value: int = self.connections.call("changes")
        return value

    def waiter(self, queue_url: str) -> RemoteQueueWaiter:
        return RemoteQueueWaiter(queue_url, self.connections)

    def table_items(self, table_name: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.connections.call("table_items", table_name)
        return items

    def partition_items(self, table_name: str, hash_value: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.connections.call("partition_items", table_name, hash_value)
        return items

    def item_by_sort_key(self, table_name: str, sort_value: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.connections.call("item_by_sort_key", table_name, sort_value)
        return item

    def put_items(self, table_name: str, items: list[dict[str, Any]]) -> None:
        self.connections.call("put_items", table_name, items)

    def kms_key_material(self, key_id: str) -> bytes:
        material: bytes = self.connections.call("kms_key_material", key_id)
        return material

    def import_kms_key(self, key_id: str, material: bytes, description: str) -> None:
        self.connections.call("import_kms_key", key_id, material, description)

    def replay_journal(self) -> int:
        """Apply the journal's segments from before this start (journal.py); the number of item images."""
        applied: int = self.connections.call("replay_journal")
        return applied

    def rotate_journal(self) -> int | None:
        """Start a new journal segment; its number (the older ones may go once a snapshot is written),
        or None without a journal."""
        number: int | None = self.connections.call("rotate_journal")
        return number


# moto's end --------------------------------------------------------------------------------------------


class _Server:
    """Answers the stack's connections in moto's process, one thread per connection."""

    def __init__(self, path: str, calls: dict[str, Callable[..., Any]]) -> None:
        self._calls = calls
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(128)

    def serve_forever(self) -> None:
        while True:
            connection, _ = self._listener.accept()
            threading.Thread(target=self._serve, args=(connection,), name="moto-socket", daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            while True:
                try:
                    kind, *args = _receive(connection)
                except (EOFError, OSError):
                    return  # the stack closed this connection (or its thread's socket)
                try:
                    data = marshal.dumps((True, self._calls[kind](*args)))
                except Exception as exc:
                    refused = _is_moto_error(exc)
                    if not refused:
                        log.exception("moto's process failed to answer a %s call", kind)
                    message = str(getattr(exc, "message", "") or exc)
                    data = marshal.dumps((False, refused, f"{type(exc).__name__}: {message}"))
                try:
                    connection.sendall(_LENGTH.pack(len(data)) + data)
                except OSError:
                    return


def _is_moto_error(exc: Exception) -> bool:
    from moto.core.exceptions import JsonRESTError, ServiceException

    return isinstance(exc, JsonRESTError | ServiceException)


def _moto_calls(gate: Any) -> dict[str, Callable[..., Any]]:
    """What the stack may ask moto's process: AWS calls (under the gate), the queue wait, the change
    count, the snapshot reads and writes, the journal's replay and rotation, the KMS key export and
    import."""
    from edgecron_cli.local import journal, moto_server

    def replay_journal() -> int:
        if gate.journal is None:
            return 0
        return moto_server.apply_images(journal.read_images(gate.journal.directory, gate.journal.number))

    def rotate_journal() -> int | None:
        return None if gate.journal is None else int(gate.journal.rotate())

    route_cache: dict[str, list[Any]] = {}
    route_lock = threading.Lock()

    def aws(
        method: str, url: str, headers: dict[str, str], body: bytes, operation: str, target: str, signing: str
    ) -> moto_server.Answer | None:
        with route_lock:
            routes = route_cache.get(signing)
            if routes is None:
                routes = route_cache[signing] = moto_server.routes(signing)
        path = urlsplit(url).path or "/"
        handler = next((h for pattern, h in routes if pattern.fullmatch(path)), None)
        if handler is None:
            return None  # the stack sends it over HTTP
        answer: moto_server.Answer = gate.call(
            target,
            operation,
            lambda: moto_server.answer(handler, method, url, headers, body),
            body,
            lambda answered: answered[0],
        )
        return answer

    return {
        "aws": aws,
        "wait": lambda queue_url, timeout: moto_server.QueueWaiter(queue_url).wait(timeout),
        "changes": lambda: gate.changes.value,
        "table_items": moto_server.table_items,
        "partition_items": moto_server.partition_items,
        "item_by_sort_key": moto_server.item_by_sort_key,
        "put_items": moto_server.put_items,
        "kms_key_material": moto_server.kms_key_material,
        "import_kms_key": moto_server.import_kms_key,
        "replay_journal": replay_journal,
        "rotate_journal": rotate_journal,
    }


def serve(aws_port: int, socket_path: str, verbose: bool, journal_dir: str | None = None) -> int:
    """moto's process: moto's HTTP server on `aws_port`, the socket at `socket_path`, until stdin closes;
    DynamoDB's writes are journaled in `journal_dir` if given (journal.py).

    Ctrl-C and SIGTERM are left to the stack, which still needs moto for its last snapshot before it
    closes this process's stdin; a stack killed outright closes it too.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("moto: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    log.propagate = False
    ready = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything else printed goes to stderr, beside the stack's messages
    from edgecron_cli.local.journal import FSYNC_VARIABLE, Journal
    from edgecron_cli.local.moto_server import start_moto

    try:
        journal = (
            Journal(Path(journal_dir), fsync=os.environ.get(FSYNC_VARIABLE, "") in ("1", "true"))
            if journal_dir
            else None
        )
        server = start_moto(aws_port, journal)
        _, port = server.get_host_and_port()
        listener = _Server(socket_path, _moto_calls(server.gate))
    except OSError as exc:
        ready.write(json.dumps({"errno": exc.errno, "error": exc.strerror or str(exc)}) + "\n")
        ready.close()
        return 1
    threading.Thread(target=listener.serve_forever, name="moto-accept", daemon=True).start()
    ready.write(json.dumps({"port": port}) + "\n")
    ready.close()
    sys.stdin.buffer.read()  # until the stack closes it, or exits
    with contextlib.suppress(OSError):  # a stack that was killed cannot remove them itself
        os.unlink(socket_path)
        os.rmdir(os.path.dirname(socket_path))  # only if empty: the stack's directory for the socket
    logging.shutdown()
    os._exit(0)  # moto's state lives in the stack's snapshots: nothing else to keep


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog=MODULE, description="moto's process of the local stack")
    parser.add_argument("--aws-port", type=int, required=True)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--journal", help="the directory of the journal of DynamoDB's writes")
    args = parser.parse_args(argv)
    return serve(args.aws_port, args.socket, args.verbose, args.journal)


if __name__ == "__main__":
    sys.exit(main())
