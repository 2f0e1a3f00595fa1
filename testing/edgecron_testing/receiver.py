"""A real HTTP receiver on 127.0.0.1 for tests: scripted answers per path, every request recorded,
and the most requests of a path it has held open at once (to see concurrency without a clock)."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)
    delay_sec: float = 0.0
    # Hold the answers until this many requests of the path are open at once (0: do not hold); then
    # they all go. A client that sends one at a time never gets there: after HOLD_GUARD_SEC the hold
    # gives up for good on that path, so such a test ends (and fails on max_in_flight), not hangs.
    together: int = 0


HOLD_GUARD_SEC = 30.0


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    query: str = ""  # the raw query string, without "?"


class Receiver:
    """Answers each path with its queued replies (the last one repeats), records what arrived."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._script: dict[str, deque[Reply]] = defaultdict(deque)
        self._decide: dict[str, Callable[[Received], Reply]] = {}
        self._lock = threading.Lock()
        self._open = threading.Condition(self._lock)
        self._in_flight: dict[str, int] = defaultdict(int)
        self._max_in_flight: dict[str, int] = defaultdict(int)
        self._released: set[str] = set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                path, _, query = self.path.partition("?")
                with receiver._lock:
                    received = Received(
                        self.command,
                        path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                        time.time(),
                        query,
                    )
                    receiver.requests.append(received)
                    queue = receiver._script[path]
                    decide = receiver._decide.get(path)
                    if decide is not None:
                        reply = decide(received)
                    else:
                        reply = queue.popleft() if len(queue) > 1 else (queue[0] if queue else Reply())
                    receiver._in_flight[path] += 1
                    receiver._max_in_flight[path] = max(
                        receiver._max_in_flight[path], receiver._in_flight[path]
                    )
                    if reply.together and receiver._in_flight[path] >= reply.together:
                        receiver._released.add(path)  # for good: an early answer must not re-close it
                        receiver._open.notify_all()
                    if (
                        reply.together
                        and path not in receiver._released
                        and not receiver._open.wait_for(
                            lambda: path in receiver._released, timeout=HOLD_GUARD_SEC
                        )
                    ):
                        receiver._released.add(path)  # the hold gives up: answer this and the rest
                try:
                    self._answer(reply)
                finally:
                    with receiver._lock:
                        receiver._in_flight[path] -= 1

            def _answer(self, reply: Reply) -> None:
                if reply.delay_sec:
                    time.sleep(reply.delay_sec)
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def script(self, path: str, *replies: Reply) -> None:
        with self._lock:
            self._script[path] = deque(replies)

    def answer(self, path: str, decide: Callable[[Received], Reply]) -> None:
        """Answer each request of `path` with what `decide` says of it (in place of a script)."""
        with self._lock:
            self._decide[path] = decide

    def received(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def max_in_flight(self, path: str) -> int:
        """The most requests of `path` that were open at the same time."""
        with self._lock:
            return self._max_in_flight[path]

    def wait_for(self, path: str, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = self.received(path)
            if len(got) >= count:
                return got
            time.sleep(0.02)
        return self.received(path)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
