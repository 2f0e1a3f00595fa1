"""The outbound HTTP call of one Delivery Attempt: endpoint method, headers and timeout; redirects
are never followed; the response body is read only up to the summary limit.

Every call first runs the SSRF guard (:func:`edgecron.services.target_guard.check_url`): a refused
target ends the attempt as a terminal ``refused`` failure before any connection is made. The request
then goes to one of the addresses the guard checked -- never to a second DNS answer that rebinding could
change: :class:`PinnedAdapter` swaps the URL host for the checked address when it picks the urllib3
pool, while the ``Host`` header, TLS SNI and certificate verification keep the URL's host name.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import requests
from requests.adapters import HTTPAdapter
from requests.models import PreparedRequest
from requests.utils import default_headers
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError

from edgecron import __version__
from edgecron.domain.outcome import SUMMARY_LIMIT, AttemptResult, ErrorKind, truncate_summary
from edgecron.services import target_guard
from edgecron.services.target_guard import ResolvedTarget, TargetRefused, TargetUnresolvable

if TYPE_CHECKING:
    from requests.adapters import _HostParams, _PoolKwargs

USER_AGENT = f"EdgeCron/{__version__} (+https://github.com/edgecron/edgecron)"
MAX_CONNECT_ADDRESSES = 3  # checked addresses tried in resolver order when connecting fails
_local = threading.local()


class PinnedRequest(PreparedRequest):
    """A prepared request that may only go to ``address``, an address the SSRF guard checked."""

    target: ResolvedTarget
    address: str


class PinnedAdapter(HTTPAdapter):
    """Sends only PinnedRequests, each to its checked address.

    The urllib3 pool is chosen by (scheme, checked address, port, host name): the address replaces the
    URL host, so urllib3 connects to it without resolving anything, and ``server_hostname`` keeps the
    URL's host name for TLS SNI and certificate verification (the ssl module checks the certificate
    against it). Pools live in this adapter, one per thread, so connections are reused.
    """

    def build_connection_pool_key_attributes(
        self, request: PreparedRequest, verify: bool | str, cert: str | tuple[str, str] | None = None
    ) -> tuple[_HostParams, _PoolKwargs]:
        if not isinstance(request, PinnedRequest):
            raise TargetRefused("request without a checked address (refusing to resolve the host again)")
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        host_params["host"] = request.address
        host_params["port"] = request.target.port
        cast(dict[str, Any], pool_kwargs)["server_hostname"] = request.target.host
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


def _connect_failed(exc: requests.RequestException) -> bool:
    """Did the attempt fail before a connection existed (so nothing was sent)?"""
    reason = exc.args[0] if exc.args else None
    return isinstance(reason, MaxRetryError) and isinstance(reason.reason, ConnectTimeoutError)


def _elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def send(method: str, url: str, headers: dict[str, str], body: bytes | None, timeout_ms: int) -> HttpOutcome:
    timeout = timeout_ms / 1000
    started = time.perf_counter()
    kind: ErrorKind
    try:
        target = target_guard.check_url(url)
    except TargetUnresolvable as exc:  # DNS may come back: a retryable network error
        result = AttemptResult(status_code=None, error=f"dns_error: {exc}", error_kind="network")
        return HttpOutcome(result, _elapsed_ms(started), None)
    except TargetRefused as exc:
        result = AttemptResult(status_code=None, error=f"target refused: {exc}", error_kind="refused")
        return HttpOutcome(result, _elapsed_ms(started), None)

    error, kind = "no address to connect to", "network"
    addresses = target.addresses[:MAX_CONNECT_ADDRESSES]
    for index, address in enumerate(addresses):
        remaining = max(timeout - (time.perf_counter() - started), 0.001)
        last = index == len(addresses) - 1
        try:
            with _adapter().send(
                _prepare(method, target, address, headers, body),
                stream=True,
                timeout=(min(remaining, 5.0), timeout),
            ) as response:
                raw = response.raw.read(SUMMARY_LIMIT + 4, decode_content=True) if response.raw else b""
                redirect = 300 <= response.status_code < 400
                result = AttemptResult(
                    status_code=response.status_code,
                    error_kind="redirect" if redirect else None,
                    error="redirect_not_followed" if redirect else None,
                    retry_after=response.headers.get("retry-after"),
                )
                return HttpOutcome(result, _elapsed_ms(started), truncate_summary(raw or b""))
        except requests.RequestException as exc:
            # A connection that could not be made sent nothing: try the next checked address.
            if not last and _connect_failed(exc) and time.perf_counter() - started < timeout:
                continue
            if isinstance(exc, requests.Timeout):
                error, kind = f"timeout after {timeout_ms} ms ({type(exc).__name__})", "timeout"
            elif isinstance(exc, requests.ConnectionError):
                error, kind = f"connection_error: {_short(exc)}", "network"
            else:
                error, kind = f"request_error: {_short(exc)}", "network"
            break
    return HttpOutcome(
        AttemptResult(status_code=None, error=error, error_kind=kind), _elapsed_ms(started), None
    )


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:297] + "..."
