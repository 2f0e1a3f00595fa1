"""Hostile HTTP receivers on 127.0.0.1 for tests: raw socket servers that misbehave on purpose.

Each `HostileReceiver` listens on its own port and answers every request the same hostile way
(`Behaviour`), one thread per connection, and counts the requests it read (with `raw`, the
connections it answered without reading a request): a test compares that count
with the attempts EdgeCron recorded. Everything is bounded: a connection is served for at most
`hold_sec`, the server stops accepting after `lifetime_sec`, and every thread is a daemon, so a
receiver stops by itself even if a test forgets to close it.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

CRLF = b"\r\n"


def response_head(status: str, *headers: str, length: int | None = 0) -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers, "Connection: close"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@dataclass
class Conn:
    """One accepted connection, as a behaviour sees it."""

    sock: socket.socket
    port: int
    stop: threading.Event
    ends_at: float

    def send(self, data: bytes) -> bool:
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def hold(self, seconds: float) -> None:
        """Keep the connection open (bounded by the receiver's hold and lifetime)."""
        self.stop.wait(max(0.0, min(seconds, self.ends_at - time.monotonic())))

    def reset(self) -> None:
        """Close with a TCP RST instead of a FIN."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


Behaviour = Callable[[Conn], None]


def replies(data: bytes) -> Behaviour:
    def behave(conn: Conn) -> None:
        conn.send(data)

    return behave


def too_many_requests(retry_after: str) -> Behaviour:
    return replies(response_head("429 Too Many Requests", f"Retry-After: {retry_after}"))


def unavailable_with_retry_directive(value: str) -> Behaviour:
    """A 503 whose `edgecron-retry` header carries `value` (latin-1, so any byte the receiver likes)."""
    return replies(response_head("503 Service Unavailable", f"edgecron-retry: {value}"))


def dribble(interval_sec: float = 0.5, body: bytes = b"0123456789") -> Behaviour:
    """A valid 200, one byte every `interval_sec`: no socket read ever waits long."""

    def behave(conn: Conn) -> None:
        for byte in response_head("200 OK", length=len(body)) + body:
            if conn.stop.is_set() or time.monotonic() > conn.ends_at or not conn.send(bytes([byte])):
                return
            conn.hold(interval_sec)

    return behave


def huge_body(size: int = 10 * 1024 * 1024) -> Behaviour:
    def behave(conn: Conn) -> None:
        if not conn.send(response_head("200 OK", length=size)):
            return
        chunk = b"x" * 65536
        sent = 0
        while sent < size and not conn.stop.is_set() and time.monotonic() < conn.ends_at:
            if not conn.send(chunk[: size - sent]):
                return
            sent += len(chunk)

    return behave


def redirect_to_self() -> Behaviour:
    def behave(conn: Conn) -> None:
        conn.send(response_head("302 Found", f"Location: http://127.0.0.1:{conn.port}/again"))

    return behave


def reset_connection() -> Behaviour:
    return Conn.reset


def hang_after_headers(seconds: float = 60.0) -> Behaviour:
    def behave(conn: Conn) -> None:
        if conn.send(response_head("200 OK", length=100)):
            conn.hold(seconds)

    return behave


def invalid_status_line() -> Behaviour:
    return replies(b"HTTP/1.1 TWO HUNDRED OK\r\nContent-Length: 0\r\n\r\n")


def header_line_too_long() -> Behaviour:
    return replies(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\nContent-Length: 0\r\n\r\n")


def too_many_headers(count: int = 120) -> Behaviour:
    lines = b"".join(b"X-%d: a\r\n" % i for i in range(count))
    return replies(b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 0\r\n\r\n")


def broken_gzip() -> Behaviour:
    body = b"\x1f\x8bnot really gzip"
    return replies(response_head("200 OK", "Content-Encoding: gzip", length=len(body)) + body)


def tls_dribble(interval_sec: float = 0.3) -> Behaviour:
    """The start of a TLS handshake record announcing 16 KiB, then a byte every `interval_sec`: the
    client's handshake waits for the whole record."""

    def behave(conn: Conn) -> None:
        for byte in b"\x16\x03\x03\x40\x00" + b"\x02" * 200:
            if conn.stop.is_set() or time.monotonic() > conn.ends_at or not conn.send(bytes([byte])):
                return
            conn.hold(interval_sec)

    return behave


class HostileReceiver:
    def __init__(
        self, behaviour: Behaviour, *, hold_sec: float = 30.0, lifetime_sec: float = 180.0, raw: bool = False
    ) -> None:
        self.behaviour = behaviour
        self.raw = raw  # answer at once, without reading an HTTP request (e.g. to a TLS client)
        self.hold_sec = hold_sec
        self.requests = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ends_at = time.monotonic() + lifetime_sec
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True, name=f"hostile-{self.port}").start()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self._stop.set()

    def _accept(self) -> None:
        try:
            while not self._stop.is_set() and time.monotonic() < self._ends_at:
                try:
                    sock, _ = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                with self._lock:
                    self.connections += 1
                threading.Thread(target=self._serve, args=(sock,), daemon=True).start()
        finally:
            self._listener.close()

    def _serve(self, sock: socket.socket) -> None:
        ends_at = min(time.monotonic() + self.hold_sec, self._ends_at)
        try:
            if not self.raw and not self._read_request(sock, ends_at):
                return
            with self._lock:
                self.requests += 1
            self.behaviour(Conn(sock, self.port, self._stop, ends_at))
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sock.close()

    @staticmethod
    def _read_request(sock: socket.socket, ends_at: float) -> bool:
        """Read one request head and its Content-Length body (bounded); False if none arrived."""
        data = b""
        while b"\r\n\r\n" not in data:
            sock.settimeout(max(0.05, ends_at - time.monotonic()))
            chunk = sock.recv(65536)
            if not chunk or len(data) > 1_000_000:
                return False
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(CRLF)[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length" and value.strip().isdigit():
                length = min(int(value.strip()), 10_000_000)
        while len(body) < length:
            sock.settimeout(max(0.05, ends_at - time.monotonic()))
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return True
