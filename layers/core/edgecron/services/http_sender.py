"""The outbound HTTP call of one Delivery Attempt: endpoint method, headers and timeout; redirects
are never followed; the response body is read only up to the summary limit."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import requests
from requests.adapters import HTTPAdapter

from edgecron import __version__
from edgecron.domain.outcome import SUMMARY_LIMIT, AttemptResult, ErrorKind, truncate_summary

USER_AGENT = f"EdgeCron/{__version__} (+https://github.com/edgecron/edgecron)"
_local = threading.local()


def _session() -> requests.Session:
    """One pooled session per thread (connections are reused across warm invocations)."""
    session: requests.Session | None = getattr(_local, "session", None)
    if session is None:
        session = requests.Session()
        session.trust_env = False  # never route webhooks through a proxy from the environment
        adapter = HTTPAdapter(pool_connections=16, pool_maxsize=16, max_retries=0)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        _local.session = session
    return session


@dataclass(frozen=True)
class HttpOutcome:
    result: AttemptResult
    latency_ms: int
    response_summary: str | None


def send(method: str, url: str, headers: dict[str, str], body: bytes | None, timeout_ms: int) -> HttpOutcome:
    timeout = timeout_ms / 1000
    started = time.perf_counter()
    kind: ErrorKind
    try:
        with _session().request(
            method,
            url,
            headers=headers,
            data=body,
            timeout=(min(timeout, 5.0), timeout),
            allow_redirects=False,
            stream=True,
        ) as response:
            raw = response.raw.read(SUMMARY_LIMIT + 4, decode_content=True) if response.raw else b""
            latency = int((time.perf_counter() - started) * 1000)
            redirect = 300 <= response.status_code < 400
            result = AttemptResult(
                status_code=response.status_code,
                error_kind="redirect" if redirect else None,
                error="redirect_not_followed" if redirect else None,
                retry_after=response.headers.get("retry-after"),
            )
            return HttpOutcome(result, latency, truncate_summary(raw or b""))
    except requests.Timeout as exc:
        error, kind = f"timeout after {timeout_ms} ms ({type(exc).__name__})", "timeout"
    except requests.ConnectionError as exc:
        error, kind = f"connection_error: {_short(exc)}", "network"
    except requests.RequestException as exc:
        error, kind = f"request_error: {_short(exc)}", "network"
    latency = int((time.perf_counter() - started) * 1000)
    return HttpOutcome(AttemptResult(status_code=None, error=error, error_kind=kind), latency, None)


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 300 else text[:297] + "..."
