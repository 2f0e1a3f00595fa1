"""One HTTP request to the API, retried when the API says it may be: 429 and 5xx, with exponential
back-off that honours Retry-After, bounded in attempts and in total waiting time.

A POST is retried only when retrying cannot create a second resource: it carries an Idempotency-Key
(the same key on every try, so the API answers the retry with the first result), or the API answered
429 (it refused the request before doing anything).
"""

from __future__ import annotations

import json
import random
import re
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from importlib import metadata
from typing import Any
from urllib.parse import urlencode

import urllib3

from edgecron_client.errors import ApiError, TransportError

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
DEFAULT_TIMEOUT_SEC = 30.0


@dataclass(frozen=True)
class Backoff:
    """How a failed call is retried. `attempts` counts the first try; no single wait is longer than
    `max_delay_sec` and all waits of one call add up to at most `total_sec` (a Retry-After beyond
    what is left ends the retries: the error is raised with its `retry_after`)."""

    attempts: int = 4
    base_delay_sec: float = 0.25
    max_delay_sec: float = 10.0
    total_sec: float = 30.0

    def delay(self, retry: int, retry_after: float | None) -> float:
        """The wait before retry number `retry` (1 = the first retry)."""
        if retry_after is not None:
            return retry_after
        backoff = min(self.max_delay_sec, self.base_delay_sec * 2.0 ** (retry - 1))
        return backoff * random.uniform(0.5, 1.0)  # jitter: clients that failed together spread out


DEFAULT_BACKOFF = Backoff()
NO_RETRY = Backoff(attempts=1)


def _version() -> str:
    for distribution in ("edgecron-client", "edgecron"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return "dev"


def _tls_context() -> ssl.SSLContext:
    """The system's trusted certificates, and certifi's bundle as well when it is installed."""
    context = ssl.create_default_context()
    try:
        import certifi  # optional: installed alongside requests, not a dependency of the client

        context.load_verify_locations(certifi.where())
    except ImportError:
        pass
    return context


def new_pool() -> urllib3.PoolManager:
    """The connection pool a client keeps (keep-alive across calls): TLS verified, no redirects."""
    return urllib3.PoolManager(ssl_context=_tls_context(), retries=False)


def parse_retry_after(value: str | None, now: Callable[[], datetime] | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None if absent or
    unreadable, 0 for a date in the past."""
    if value is None:
        return None
    text = value.strip()
    if re.fullmatch(r"\d{1,9}(\.\d{1,6})?", text):
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now() if now is not None else datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def _error_from(response: urllib3.BaseHTTPResponse) -> ApiError:
    try:
        body = json.loads(response.data)
    except ValueError:
        body = None
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    reason = response.reason or ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        field = error.get("field")
        return ApiError(
            response.status,
            error["code"],
            str(error.get("message") or reason),
            field if isinstance(field, str) else None,
            retry_after=retry_after,
        )
    text = " ".join(response.data.decode("utf-8", "replace").split())[:200] or reason or "no body"
    return ApiError(response.status, f"HTTP_{response.status}", text, retry_after=retry_after)


_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def _describe(exc: urllib3.exceptions.HTTPError) -> str:
    """A one-line reason, instead of urllib3's nested message (a refused connection is, to urllib3,
    also a kind of connect timeout: the errno decides first)."""
    match = _ERRNO.search(str(exc))
    if match:
        return match.group(1).strip().lower()
    if isinstance(exc, urllib3.exceptions.TimeoutError):
        return "timed out"
    return type(exc).__name__


def drop_none(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


class Transport:
    """One base URL and one bearer key; `request` sends, retries and decodes."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SEC,
        backoff: Backoff = DEFAULT_BACKOFF,
        pool: urllib3.PoolManager | None = None,
        sleep: Callable[[float], None] = time.sleep,
        user_agent: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.backoff = backoff
        self._pool = pool or new_pool()
        self._sleep = sleep
        self._headers = {
            "Authorization": f"Bearer {key}",
            "Accept": "application/json",
            "User-Agent": user_agent or f"edgecron-client/{_version()}",
        }

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        send_body: bool = False,
        idempotency_key: str | None = None,
    ) -> Any:
        """The decoded JSON body (None for 204) of the first answer that is not worth retrying."""
        waited = 0.0
        retry = 0
        while True:
            try:
                return self._once(method, path, params, body, send_body, idempotency_key)
            except ApiError as exc:
                retry += 1
                if not self._may_retry(method, exc, idempotency_key) or retry >= self.backoff.attempts:
                    raise
                wait = self.backoff.delay(retry, exc.retry_after)
                if wait > self.backoff.max_delay_sec or waited + wait > self.backoff.total_sec:
                    raise
            self._sleep(wait)
            waited += wait

    @staticmethod
    def _may_retry(method: str, exc: ApiError, idempotency_key: str | None) -> bool:
        if exc.status not in RETRYABLE_STATUSES:
            return False
        return method != "POST" or idempotency_key is not None or exc.status == 429

    def _once(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None,
        body: Any,
        send_body: bool,
        idempotency_key: str | None,
    ) -> Any:
        headers = dict(self._headers)
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        query = urlencode(drop_none(params or {}), doseq=True)
        url = self.base_url + path + (f"?{query}" if query else "")
        payload: bytes | None = None
        if send_body:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            response = self._pool.request(
                method,
                url,
                body=payload,
                headers=headers,
                timeout=urllib3.Timeout(total=self.timeout),
                redirect=False,
                retries=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise TransportError(f"cannot reach {self.base_url}: {_describe(exc)}") from exc
        if response.status >= 400:
            raise _error_from(response)
        if response.status >= 300:  # the API never redirects: the URL is wrong (http vs https?)
            where = response.headers.get("location", "elsewhere")
            raise TransportError(f"{method} {url} redirected ({response.status}) to {where}; check the URL")
        if response.status == 204 or not response.data:
            return None
        try:
            return json.loads(response.data)
        except ValueError as exc:
            raise TransportError(
                f"{method} {path} answered {response.status} with a body that is not JSON"
            ) from exc
