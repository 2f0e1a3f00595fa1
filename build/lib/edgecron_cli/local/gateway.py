"""API Gateway HTTP API emulation: HTTP requests in, payload format 2.0 events to the API function, responses out."""

from __future__ import annotations

import base64
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from edgecron_cli.local.intrinsics import ACCOUNT_ID
from edgecron_cli.local.lambda_runtime import Container, Invocation

log = logging.getLogger("edgecron_cli.local")

CFN_RESPONSE_PATH = "/__local/cfn-response/"
_API_ID = "local"


class CfnResponses:
    """Answers of custom resources, which CloudFormation would receive on a presigned S3 URL."""

    def __init__(self) -> None:
        self._answers: dict[str, dict[str, Any]] = {}
        self._changed = threading.Condition()

    def record(self, request_id: str, answer: dict[str, Any]) -> None:
        with self._changed:
            self._answers[request_id] = answer
            self._changed.notify_all()

    def wait(self, request_id: str, timeout: float) -> dict[str, Any] | None:
        with self._changed:
            self._changed.wait_for(lambda: request_id in self._answers, timeout)
            return self._answers.get(request_id)


class ContainerPool:
    """Warm API containers; a request takes a free one, as Lambda routes to an idle execution environment."""

    def __init__(self, containers: Sequence[Container]) -> None:
        self._idle: queue.SimpleQueue[Container] = queue.SimpleQueue()
        for container in containers:
            self._idle.put(container)

    def invoke(self, event: dict[str, Any]) -> Invocation:
        container = self._idle.get()
        try:
            return container.invoke(event)
        finally:
            self._idle.put(container)


def build_event(
    method: str,
    target: str,
    headers: list[tuple[str, str]],
    body: bytes,
    source_ip: str,
    protocol: str,
) -> dict[str, Any]:
    """The payload format 2.0 event API Gateway would send for this request (route `$default`)."""
    split = urlsplit(target)
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        lower = name.lower()
        if lower == "cookie":
            cookies.extend(part.strip() for part in value.split(";") if part.strip())
        else:
            joined[lower] = f"{joined[lower]},{value}" if lower in joined else value
    now = datetime.now(UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": split.path,
        "rawQueryString": split.query,
        "headers": joined,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": _API_ID,
            "domainName": joined.get("host", ""),
            "domainPrefix": joined.get("host", "").split(".")[0],
            "http": {
                "method": method,
                "path": split.path,
                "protocol": protocol,
                "sourceIp": source_ip,
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "pathParameters": {"proxy": split.path.lstrip("/")},
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    query: dict[str, str] = {}
    for name, value in parse_qsl(split.query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    if query:
        event["queryStringParameters"] = query
    if body:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(body).decode("ascii")
            event["isBase64Encoded"] = True
    return event


def http_response(result: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """Turn a handler's return value into status, headers and body, as API Gateway does for format 2.0."""
    if not (isinstance(result, dict) and "statusCode" in result):
        # A 2.0 handler may return any JSON value: API Gateway answers 200 with it as the body.
        return 200, [("content-type", "application/json")], json.dumps(result).encode()
    headers: list[tuple[str, str]] = [
        (name, str(value)) for name, value in (result.get("headers") or {}).items()
    ]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers.extend((name, str(value)) for value in values)
    headers.extend(("set-cookie", str(cookie)) for cookie in result.get("cookies") or [])
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    return int(result["statusCode"]), headers, body


def _response(invocation: Invocation) -> tuple[int, list[tuple[str, str]], bytes]:
    """A function error, or a response API Gateway cannot map, is a 500 as API Gateway sends it."""
    if invocation.ok:
        try:
            return http_response(invocation.result)
        except (TypeError, ValueError, KeyError):
            log.exception("the API function returned a response API Gateway would reject")
    return 500, [("content-type", "application/json")], b'{"message":"Internal Server Error"}'


class _RequestHandler(BaseHTTPRequestHandler):
    server: Gateway
    protocol_version = "HTTP/1.1"  # keep-alive, as clients reusing a session expect
    # The headers and the body go out in two sends: without TCP_NODELAY, a keep-alive client waits
    # for a delayed ACK (about 40 ms on Linux) before it sees the body of every response.
    disable_nagle_algorithm = True

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.command == "PUT" and self.path.startswith(CFN_RESPONSE_PATH):
            self.server.cfn_responses.record(self.path[len(CFN_RESPONSE_PATH) :], json.loads(body or b"{}"))
            self._send(200, [], b"")
            return
        started = time.monotonic()
        event = build_event(
            self.command,
            self.path,
            list(self.headers.items()),
            body,
            self.client_address[0],
            self.request_version,
        )
        status, headers, payload = _response(self.server.pool.invoke(event))
        headers.append(("apigw-requestid", event["requestContext"]["requestId"]))
        self._send(status, headers, payload)
        log.debug(
            "%s %s → %d (%.0f ms)", self.command, self.path, status, (time.monotonic() - started) * 1000
        )

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    # API Gateway passes every method to the $default route; the API answers 405 where it does not fit
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _handle

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):  # any other method token (QUERY, PURGE, …) goes to the API too
            return self._handle
        raise AttributeError(name)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """`_handle` logs each request with its duration instead."""

    def log_message(self, format: str, *args: Any) -> None:
        """Protocol errors go to the debug log (shown with --verbose) instead of stderr."""
        log.debug("gateway: " + format, *args)


class Gateway(ThreadingHTTPServer):
    """The HTTP API on 127.0.0.1; one thread per connection, one free container per request."""

    daemon_threads = True

    def __init__(self, host: str, port: int, containers: Sequence[Container]) -> None:
        super().__init__((host, port), _RequestHandler)
        self.pool = ContainerPool(containers)
        self.cfn_responses = CfnResponses()
        self._thread = threading.Thread(target=self.serve_forever, name="gateway", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join()
