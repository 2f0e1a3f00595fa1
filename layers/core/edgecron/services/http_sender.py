"""The outbound HTTP call of one Delivery Attempt: endpoint method, headers and timeout; redirects
are never followed; the response body is read only up to the summary limit.

Every call first runs the SSRF guard (:func:`edgecron.services.target_guard.check_url`): a refused
target ends the attempt as a terminal ``refused`` failure before any connection is made. The request
then goes to one of the addresses the guard checked -- never to a second DNS answer that rebinding could
change: :class:`PinnedAdapter` swaps the URL host for the checked address when it picks the urllib3
pool, while the ``Host`` header, TLS SNI and certificate verification keep the URL's host name.

The receiver is hostile until proven otherwise, so :func:`send` is total: whatever happens (a request
that cannot be encoded, a reset, a garbage status line, a 10 MB body, a byte every half second) it
returns an :class:`HttpOutcome`, never raises. ``timeout_ms`` is one total deadline for the whole
attempt -- connecting (to every address tried), TLS, the status line, headers and the bounded body
read -- not a limit per socket read: when it passes, the attempt's socket is shut down, so a read
blocked anywhere returns at once and the attempt is recorded as a timeout.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import http.client
import itertools
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.models import PreparedRequest
from requests.utils import default_headers
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError, DecodeError, MaxRetryError, ReadTimeoutError
from urllib3.exceptions import InvalidHeader as ResponseHeaderInvalid
from urllib3.util.ssl_ import create_urllib3_context

from edgecron import __version__
from edgecron.domain.outcome import RETRY_DIRECTIVE_HEADER, SUMMARY_LIMIT, AttemptResult, truncate_summary
from edgecron.domain.vocabulary import ErrorKind
from edgecron.services import target_guard
from edgecron.services.target_guard import ResolvedTarget, TargetRefused, TargetUnresolvable

if TYPE_CHECKING:
    from requests.adapters import _HostParams, _PoolKwargs

USER_AGENT = f"EdgeCron/{__version__} (+https://github.com/edgecron/edgecron)"
MAX_CONNECT_ADDRESSES = 3  # checked addresses tried in resolver order when connecting fails
CONNECT_TIMEOUT_CAP_SEC = 5.0  # one address may not take the whole budget of the others
SUMMARY_READ_BYTES = SUMMARY_LIMIT + 4  # the body bytes read at most (truncate_summary's window)
_local = threading.local()


class _Deadline:
    """The total deadline of one attempt. When it passes, every socket the attempt uses is shut down
    (both directions), so a read blocked in connect, the TLS handshake, the status line, the headers
    or the body returns at once; the attempt then knows it was cut (``expired``)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends_at = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._done = False
        self._lock = threading.Lock()
        _watchdog.add(self)

    def remaining(self) -> float:
        return self.ends_at - time.monotonic()

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            if self.expired:
                _cut(sock)
            elif not self._done and sock not in self._sockets:
                self._sockets.append(sock)

    def finish(self) -> None:
        """After this returns the watchdog cuts nothing: a pooled connection stays usable."""
        with self._lock:
            self._done = True
            self._sockets.clear()

    def expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            for sock in self._sockets:
                _cut(sock)


class _Watchdog:
    """One thread for every attempt's deadline of the process (a timer thread per attempt would cost
    a thread start per delivery). A finished deadline stays queued until its time and is then skipped."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: list[tuple[float, int, _Deadline]] = []
        self._thread: threading.Thread | None = None
        self._order = itertools.count()  # ties on the same instant never compare two deadlines

    def add(self, deadline: _Deadline) -> None:
        with self._cond:
            heapq.heappush(self._queue, (deadline.ends_at, next(self._order), deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="attempt-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                wait = self._queue[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                _, _, deadline = heapq.heappop(self._queue)
            deadline.expire()


_watchdog = _Watchdog()


def _cut(sock: socket.socket) -> None:
    # the plain socket call, also on a TLS socket: it ends the fd's traffic, not the TLS state
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _watch(sock: socket.socket | None) -> None:
    deadline: _Deadline | None = getattr(_local, "deadline", None)
    if deadline is not None:
        deadline.watch(sock)


class _DeadlineSSLSocket(ssl.SSLSocket):
    """Puts the socket under the attempt's deadline before the TLS handshake (a receiver can dribble
    its certificate a byte at a time)."""

    def do_handshake(self, block: bool = False) -> None:
        _watch(self)
        super().do_handshake(block)


class _DeadlineHTTPConnection(HTTPConnection):
    """A connection that puts its socket under the current attempt's deadline: new ones when they
    connect, pooled ones when they send."""

    def connect(self) -> None:
        super().connect()
        _watch(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        _watch(self.sock)
        super().request(*args, **kwargs)


class _DeadlineHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _watch(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        _watch(self.sock)
        super().request(*args, **kwargs)


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _DeadlineHTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _DeadlineHTTPSConnection


def _tls_context() -> ssl.SSLContext:
    """urllib3's default client context (system trust store), with sockets under the deadline."""
    context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
    context.load_default_certs()
    context.sslsocket_class = _DeadlineSSLSocket
    return context


class PinnedRequest(PreparedRequest):
    """A prepared request that may only go to ``address``, an address the SSRF guard checked."""

    target: ResolvedTarget
    address: str


class PinnedAdapter(HTTPAdapter):
    """Sends only PinnedRequests, each to its checked address.

    The urllib3 pool is chosen by (scheme, checked address, port, host name): the address replaces the
    URL host, so urllib3 connects to it without resolving anything, and ``server_hostname`` keeps the
    URL's host name for TLS SNI and certificate verification (the ssl module checks the certificate
    against it). Pools live in this adapter, one per thread, so connections are reused. Their
    connections put their sockets under the current attempt's total deadline.
    """

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
        self._tls = _tls_context()

    def build_connection_pool_key_attributes(
        self, request: PreparedRequest, verify: bool | str, cert: str | tuple[str, str] | None = None
    ) -> tuple[_HostParams, _PoolKwargs]:
        if not isinstance(request, PinnedRequest):
            raise TargetRefused("request without a checked address (refusing to resolve the host again)")
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        host_params["host"] = request.address
        host_params["port"] = request.target.port
        extra = cast(dict[str, Any], pool_kwargs)
        extra["server_hostname"] = request.target.host
        if verify is True and cert is None and "ssl_context" not in extra:
            extra["ssl_context"] = self._tls
        return host_params, pool_kwargs


def _adapter() -> PinnedAdapter:
    """One pooled adapter per thread (connections are reused across warm invocations).

    Requests go straight to the adapter, not through a Session: no cookie jar carried from one
    tenant's receiver to another's, no proxies or netrc from the environment, no redirects.
    """
    adapter: PinnedAdapter | None = getattr(_local, "adapter", None)
    if adapter is None:
        adapter = PinnedAdapter(pool_connections=16, pool_maxsize=16, max_retries=0)
        _local.adapter = adapter
    return adapter


@dataclass(frozen=True)
class HttpOutcome:
    result: AttemptResult
    latency_ms: int
    response_summary: str | None


def _prepare(
    method: str, target: ResolvedTarget, address: str, headers: dict[str, str], body: bytes | None
) -> PinnedRequest:
    request = PinnedRequest()
    merged = default_headers()
    merged.update(headers)
    merged["Host"] = target.authority
    request.prepare(method=method, url=target.url, headers=dict(merged), data=body)
    request.target = target
    request.address = address
    return request


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception and what it wraps (requests and urllib3 nest the real cause in args/reason)."""
    seen: set[int] = set()
    pending = [exc]
    while pending and len(seen) < 16:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        nested = [a for a in current.args if isinstance(a, BaseException)]
        for inner in (getattr(current, "reason", None), current.__cause__, current.__context__, *nested):
            if isinstance(inner, BaseException):
                pending.append(inner)


def _connect_failed(exc: BaseException) -> bool:
    """Did the attempt fail before a connection existed (so nothing was sent)?"""
    reason = exc.args[0] if exc.args else None
    return isinstance(reason, MaxRetryError) and isinstance(reason.reason, ConnectTimeoutError)


@dataclass(frozen=True)
class _Failure:
    """A failed send as a person reads it (``error``, a short sentence), what the library said
    (``detail``, kept for debugging) and the attempt's kind."""

    error: str
    detail: str | None
    kind: ErrorKind


def _where(target: ResolvedTarget) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    return f"{host}:{target.port}"


def _detail(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_short(exc)}"


def _invalid_response(causes: list[BaseException]) -> str | None:
    """What was wrong with an answer that is not HTTP, or None when the answer was not the problem."""
    if any(isinstance(c, http.client.RemoteDisconnected) for c in causes):
        return None
    for c in causes:
        if isinstance(c, http.client.LineTooLong):
            return "response status line or header too long"
        if isinstance(c, http.client.BadStatusLine):
            return "response is not HTTP (bad status line)"
        if isinstance(c, ResponseHeaderInvalid):
            return "response has a malformed header"
        if isinstance(c, DecodeError):
            return "response body could not be decoded (Content-Encoding)"
        if type(c) is http.client.HTTPException:  # "got more than 100 headers"
            return "response has too many headers"
    return None


def _network(causes: list[BaseException], target: ResolvedTarget) -> str | None:
    """A short sentence for a connection that failed, from the OS or TLS error under it."""
    where = _where(target)
    for c in causes:
        if isinstance(c, ssl.SSLCertVerificationError):
            reason = c.verify_message or "verification failed"
            return f"TLS certificate not trusted ({target.host}: {reason})"
    for c in causes:
        if isinstance(c, ConnectionRefusedError):
            return f"connection refused ({where})"
        if isinstance(c, ConnectionResetError):
            return f"connection reset by the receiver ({where})"
        if isinstance(c, http.client.RemoteDisconnected):
            return f"connection closed by the receiver before a response ({where})"
        if isinstance(c, ssl.SSLError):
            return f"TLS handshake failed ({where})"
        if isinstance(c, OSError) and c.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return f"host unreachable ({where})"
        if isinstance(c, (BrokenPipeError, ConnectionAbortedError)):
            return f"connection closed by the receiver while sending the request ({where})"
    return None


def _classify(exc: BaseException, deadline: _Deadline, timeout_ms: int, target: ResolvedTarget) -> _Failure:
    """What a failed send or read was, as a sentence, the raw detail and the attempt's kind."""
    if deadline.expired:
        return _Failure(
            f"timed out after {round(deadline.seconds * 1000)} ms",
            f"total deadline passed ({_detail(exc)})",
            ErrorKind.TIMEOUT,
        )
    causes = list(_causes(exc))
    if any(isinstance(c, (requests.Timeout, ReadTimeoutError, socket.timeout)) for c in causes):
        return _Failure(f"timed out after {timeout_ms} ms", _detail(exc), ErrorKind.TIMEOUT)
    invalid = _invalid_response(causes)
    if invalid is not None:
        return _Failure(invalid, _detail(exc), ErrorKind.INVALID_RESPONSE)
    network = _network(causes, target)
    if network is not None:
        return _Failure(network, _detail(exc), ErrorKind.NETWORK)
    if isinstance(exc, requests.ConnectionError):
        return _Failure(f"connection failed ({_where(target)})", _detail(exc), ErrorKind.NETWORK)
    if isinstance(exc, (UnicodeError, ValueError, TypeError)):  # raised while encoding the request
        return _Failure("request could not be encoded as stored", _detail(exc), ErrorKind.INVALID_REQUEST)
    return _Failure(f"request failed ({_where(target)})", _detail(exc), ErrorKind.NETWORK)


def _elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _failed(
    error: str, kind: ErrorKind, started: float, status: int | None = None, detail: str | None = None
) -> HttpOutcome:
    result = AttemptResult(status_code=status, error=error, error_kind=kind, error_detail=detail)
    return HttpOutcome(result, _elapsed_ms(started), None)


def _failed_with(failure: _Failure, started: float, status: int | None = None) -> HttpOutcome:
    return _failed(failure.error, failure.kind, started, status, failure.detail)


def send(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes | None,
    timeout_ms: int,
    *,
    ends_by: float | None = None,
) -> HttpOutcome:
    """One attempt. Its deadline is ``timeout_ms`` from now, or ``ends_by`` (a ``time.monotonic()``
    instant, the caller's own deadline) if that comes first."""
    started = time.perf_counter()
    try:
        target = target_guard.check_url(url)
    except TargetUnresolvable as exc:  # DNS may come back: a retryable network error
        host = _host_of(url)
        return _failed(f"DNS lookup failed ({host})", ErrorKind.NETWORK, started, detail=str(exc))
    except TargetRefused as exc:
        return _failed(f"target refused: {exc}", ErrorKind.REFUSED, started)
    except Exception as exc:  # a URL stored by an older version the guard chokes on
        return _failed("URL cannot be delivered to", ErrorKind.INVALID_REQUEST, started, detail=_detail(exc))

    budget = timeout_ms / 1000
    if ends_by is not None:
        budget = min(budget, ends_by - time.monotonic())
    if budget <= 0:
        return _failed(
            "timed out: no time left before the worker's deadline",
            ErrorKind.TIMEOUT,
            started,
            detail=f"remaining budget {round(budget * 1000)} ms",
        )
    deadline = _Deadline(budget)
    _local.deadline = deadline
    try:
        return _send_within(deadline, method, target, headers, body, timeout_ms, started)
    finally:
        deadline.finish()
        _local.deadline = None


def _send_within(
    deadline: _Deadline,
    method: str,
    target: ResolvedTarget,
    headers: dict[str, str],
    body: bytes | None,
    timeout_ms: int,
    started: float,
) -> HttpOutcome:
    addresses = target.addresses[:MAX_CONNECT_ADDRESSES]
    for index, address in enumerate(addresses):
        try:
            request = _prepare(method, target, address, headers, body)
        except Exception as exc:  # nothing was sent: the stored request is unsendable
            return _failed(
                "request could not be encoded as stored",
                ErrorKind.INVALID_REQUEST,
                started,
                detail=_detail(exc),
            )
        remaining = deadline.remaining()
        if remaining <= 0:
            return _failed_with(_classify(TimeoutError(), deadline, timeout_ms, target), started)
        status: int | None = None
        try:
            with _adapter().send(
                request, stream=True, timeout=(min(remaining, CONNECT_TIMEOUT_CAP_SEC), remaining)
            ) as response:
                status = response.status_code
                retry_after = response.headers.get("retry-after")
                directive = response.headers.get(RETRY_DIRECTIVE_HEADER)
                raw = response.raw.read(SUMMARY_READ_BYTES, decode_content=True) if response.raw else b""
                redirect = 300 <= status < 400
                result = AttemptResult(
                    status_code=status,
                    error_kind=ErrorKind.REDIRECT if redirect else None,
                    error=f"redirect not followed (HTTP {status})" if redirect else None,
                    error_detail=_location(response.headers.get("location")) if redirect else None,
                    retry_after=retry_after,
                    retry_directive=directive,
                )
                return HttpOutcome(result, _elapsed_ms(started), truncate_summary(raw or b""))
        except Exception as exc:  # every failure of a send is a recorded attempt
            # A connection that could not be made sent nothing: try the next checked address.
            last = index == len(addresses) - 1
            if not last and status is None and _connect_failed(exc) and not deadline.expired:
                continue
            return _failed_with(_classify(exc, deadline, timeout_ms, target), started, status)
    return _failed("no address to connect to", ErrorKind.NETWORK, started)


def _location(value: str | None) -> str | None:
    if value is None:
        return None
    return f"Location: {value if len(value) <= 300 else value[:297] + '...'}"


def _host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or url[:100]
    except ValueError:
        return url[:100]


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:297] + "..."
