"""`edgecron listen`: a local receiver for trying EdgeCron out.

It checks every delivery's Standard Webhooks signature, prints one line per delivery and answers as
scripted (a status, a deterministic share of failures, a delay, or what a forward target answers), so
that a reader can watch retries and dead letters without writing a receiver of their own.
Everything in a request is the sender's to choose: headers and body are parsed totally and printed
escaped; a request that cannot be read gets a 400, never a traceback.
"""

from __future__ import annotations

import hmac
import math
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated, Any

import requests
import typer

from edgecron_client.webhooks import (
    HEADER_ID,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    RETRY_DIRECTIVE_HEADER,
    SigningSecretError,
    sign,
    validate_secret,
)

TOLERANCE_SEC = 300  # Standard Webhooks: refuse timestamps more than 5 minutes away
MAX_BODY_BYTES = 1024 * 1024
PREVIEW_CHARS = 80
ATTEMPT_HEADER = "edgecron-attempt"
FORWARD_TIMEOUT_SEC = 10.0
_HOP_BY_HOP = {"host", "content-length", "connection", "transfer-encoding", "keep-alive", "accept-encoding"}


@dataclass(frozen=True)
class Verdict:
    """The signature check of one delivery: verified, not verified (with why), or unchecked (no secret)."""

    verified: bool | None
    reason: str

    @property
    def label(self) -> str:
        if self.verified is None:
            return "unchecked"
        return "verified" if self.verified else f"NOT VERIFIED ({self.reason})"


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def parse_timestamp(value: str | None) -> int | None:
    """Whole seconds since the epoch, as the header carries them; anything else is None."""
    if value is None or not value.isascii() or not value.isdigit() or len(value) > 12:
        return None
    return int(value)


def verify(
    secrets: Sequence[str],
    headers: Mapping[str, str],
    body: bytes,
    now_sec: int,
    tolerance_sec: int = TOLERANCE_SEC,
) -> Verdict:
    """Standard Webhooks verification: one `v1,` entry of `webhook-signature` must match the HMAC of
    `id.timestamp.body` under one of `secrets`, and the timestamp must be within the tolerance."""
    if not secrets:
        return Verdict(None, "no secret given")
    msg_id = _header(headers, HEADER_ID)
    raw_timestamp = _header(headers, HEADER_TIMESTAMP)
    signature = _header(headers, HEADER_SIGNATURE)
    if not msg_id or raw_timestamp is None or signature is None:
        return Verdict(False, "missing webhook headers")
    timestamp = parse_timestamp(raw_timestamp)
    if timestamp is None:
        return Verdict(False, "invalid timestamp")
    if abs(now_sec - timestamp) > tolerance_sec:
        return Verdict(False, "timestamp outside tolerance")
    given = [entry for entry in signature.split(" ") if entry.startswith("v1,")]
    for secret in secrets:
        try:
            expected = sign(secret, msg_id, timestamp, body)
        except ValueError:  # SigningSecretError too; an id with spaces or control characters
            return Verdict(False, "invalid webhook-id")
        if any(hmac.compare_digest(expected.encode(), entry.encode("utf-8", "replace")) for entry in given):
            return Verdict(True, "")
    return Verdict(False, "no matching signature")


@dataclass(frozen=True)
class Script:
    """How the listener answers. `fail_rate` is a deterministic share: of the first n deliveries,
    ceil(n * rate) fail, spread evenly and starting with the first (0.3 fails the 1st, 4th and 7th of
    ten), so a try-out shows a retry at once and replays alike."""

    status: int = 200
    fail_rate: Fraction = Fraction(0)
    fail_status: int = 503
    delay_ms: int = 0
    stop_retries: bool = False  # answer every failure with `edgecron-retry: stop`

    def fails(self, n: int) -> bool:
        """Does the n-th delivery (1-based) get the scripted failure?"""
        return math.ceil(n * self.fail_rate) > math.ceil((n - 1) * self.fail_rate)

    def answer(self, n: int) -> int:
        return self.fail_status if self.fails(n) else self.status

    def headers_for(self, status: int) -> dict[str, str]:
        """Headers of an answer: a failure asks EdgeCron to stop retrying when the script says so."""
        return {RETRY_DIRECTIVE_HEADER: "stop"} if self.stop_retries and not 200 <= status < 300 else {}


def parse_fail_rate(value: float) -> Fraction:
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise typer.BadParameter("must be between 0 and 1", param_hint="--fail-rate")
    return Fraction(str(value))


def printable(text: str, limit: int = PREVIEW_CHARS) -> str:
    """`text` shortened, with control and non-printable characters escaped (a body can hold anything)."""
    out = []
    for ch in text[:limit]:
        out.append(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii"))
    return "".join(out) + ("…" if len(text) > limit else "")


@dataclass(frozen=True)
class Delivery:
    """What the listener saw of one request, for its printed line."""

    received: datetime
    webhook_id: str
    attempt: str
    lag_ms: int | None
    verdict: Verdict
    status: int
    body: bytes

    def line(self) -> str:
        lag = "-" if self.lag_ms is None else f"{self.lag_ms / 1000:.1f}s"
        return (
            f"{self.received.strftime('%H:%M:%S.%f')[:-3]}  {printable(self.webhook_id, 40) or '-'}  "
            f"attempt {printable(self.attempt, 6) or '-'}  lag {lag}  {self.verdict.label}  -> {self.status}  "
            f"{printable(self.body.decode('utf-8', 'replace'))}"
        )


@dataclass
class Listener:
    """The receiver's state: secrets, script, optional forward target, and the count of deliveries."""

    secrets: Sequence[str]
    script: Script
    forward_to: str | None = None
    echo: Callable[[str], None] = print
    now: Callable[[], datetime] = lambda: datetime.now(UTC)
    sleep: Callable[[float], None] = time.sleep
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_number(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        """Check, answer and print one delivery; the status and body to answer with."""
        received = self.now()
        n = self.next_number()
        verdict = verify(self.secrets, headers, body, int(received.timestamp()))
        status, answer = self.script.answer(n), b""
        if self.script.delay_ms:
            self.sleep(self.script.delay_ms / 1000)
        if self.forward_to and not self.script.fails(n):
            status, answer = self._forward(method, path, headers, body)
        timestamp = parse_timestamp(_header(headers, HEADER_TIMESTAMP))
        lag = None if timestamp is None else int(received.timestamp() * 1000) - timestamp * 1000
        self.echo(
            Delivery(
                received,
                _header(headers, HEADER_ID) or "",
                _header(headers, ATTEMPT_HEADER) or "",
                lag,
                verdict,
                status,
                body,
            ).line()
        )
        return status, answer

    def _forward(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        """The request passed on to the one URL the user gave (no redirects followed); 502 if it fails."""
        assert self.forward_to is not None
        kept = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}
        try:
            response = requests.request(
                method,
                self.forward_to,
                headers=kept,
                data=body,
                timeout=FORWARD_TIMEOUT_SEC,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            self.echo(f"forward to {self.forward_to} failed: {type(exc).__name__}")
            return 502, b""
        return response.status_code, response.content[:MAX_BODY_BYTES]


def make_server(listener: Listener, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server on (host, port) whose every request goes to `listener`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            raw_length = self.headers.get("content-length", "0") or "0"
            if self.headers.get("transfer-encoding"):
                self._refuse(b"send the body with a content-length")
                return
            if not raw_length.isascii() or not raw_length.isdigit() or int(raw_length) > MAX_BODY_BYTES:
                self._refuse(b"unreadable content-length")
                return
            body = self.rfile.read(int(raw_length))
            headers = {k: v for k, v in self.headers.items()}
            status, answer = listener.handle(self.command, self.path, headers, body)
            self._send(status, answer, extra=listener.script.headers_for(status))

        def _refuse(self, why: bytes) -> None:
            """400, and the connection closes: the unread body must not be taken for a next request."""
            self._send(400, why, close=True)

        def _send(
            self, status: int, body: bytes, *, close: bool = False, extra: Mapping[str, str] | None = None
        ) -> None:
            self.send_response(status)
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.send_header("content-type", "text/plain; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            if close:
                self.send_header("connection", "close")  # also makes the server close it
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_PUT = do_PATCH = do_GET = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the listener prints its own line per delivery."""

    class Server(ThreadingHTTPServer):
        daemon_threads = True

    return Server((host, port), Handler)


def _endpoint_secret(endpoint_id: str) -> str:
    """A secret for the endpoint: the API shows a secret only once, so this rotates it (the previous
    secret keeps signing for 24 h, so receivers holding it keep verifying)."""
    from edgecron_cli.commands._common import client

    secret = client().endpoints.rotate_secret(endpoint_id).get("secret")
    if not isinstance(secret, str):
        raise typer.BadParameter("the API returned no secret for this endpoint", param_hint="--endpoint")
    return secret


SECRET_ENV = "EDGECRON_LISTEN_SECRET"


def _secret_from_stdin() -> str:
    """The first line of standard input: `--secret -` keeps the secret out of the command line."""
    line = sys.stdin.readline().strip()
    if not line:
        raise typer.BadParameter("standard input gave no secret", param_hint="--secret")
    return line


def listen(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port to listen on (127.0.0.1).")] = 8000,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    secret: Annotated[
        str | None,
        typer.Option(
            envvar=SECRET_ENV,
            show_envvar=True,
            help="Signing secret (whsec_…) to verify deliveries with; `-` reads it from standard input. "
            "Prefer the environment variable or `-`: on the command line it is visible to every user "
            "of the machine (ps).",
        ),
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="Endpoint id (ep_…): rotate its secret and verify with the new one "
            "(the previous secret keeps signing for 24 h)."
        ),
    ] = None,
    status: Annotated[int, typer.Option(min=100, max=599, help="Status to answer with.")] = 200,
    fail_rate: Annotated[
        float, typer.Option(help="Share of deliveries (0-1) answered with --fail-status, spread evenly.")
    ] = 0.0,
    fail_status: Annotated[int, typer.Option(min=100, max=599, help="Status of a scripted failure.")] = 503,
    delay_ms: Annotated[int, typer.Option(min=0, max=60_000, help="Wait this long before answering.")] = 0,
    stop_retries: Annotated[
        bool, typer.Option(help="Answer failures with 'edgecron-retry: stop': EdgeCron retries no more.")
    ] = False,
    forward_to: Annotated[
        str | None, typer.Option(help="Pass each delivery on to this URL and answer with what it answers.")
    ] = None,
) -> None:
    """A local receiver: verifies signatures, prints one line per delivery, answers as scripted."""
    given = ctx.get_parameter_source("secret")
    source = given.name if given is not None else "DEFAULT"  # COMMANDLINE, ENVIRONMENT or DEFAULT
    if endpoint and source == "ENVIRONMENT":
        secret = None  # --endpoint on the command line wins over a secret in the environment
    if secret == "-":
        secret = _secret_from_stdin()
    elif secret and source == "COMMANDLINE":
        typer.echo(
            "edgecron listen: a secret on the command line is visible to other users of this machine (ps); "
            f"prefer {SECRET_ENV}=whsec_… or --secret - (standard input)",
            err=True,
        )
    if secret and endpoint:
        raise typer.BadParameter("give --secret or --endpoint, not both", param_hint="--secret")
    secrets: list[str] = []
    if secret:
        try:
            secrets.append(validate_secret(secret))
        except SigningSecretError as exc:
            raise typer.BadParameter(str(exc), param_hint="--secret") from None
    elif endpoint:
        from edgecron_cli.commands._common import handled

        secrets.append(handled(_endpoint_secret)(endpoint))
    if forward_to and not forward_to.startswith(("http://", "https://")):
        raise typer.BadParameter("must be an http:// or https:// URL", param_hint="--forward-to")
    script = Script(status, parse_fail_rate(fail_rate), fail_status, delay_ms, stop_retries)
    listener = Listener(secrets, script, forward_to, echo=lambda line: typer.echo(line))
    server = make_server(listener, host, port)
    bound = server.server_address[1]
    typer.echo(
        f"edgecron listen on http://{host}:{bound}/ "
        f"({'verifying signatures' if secrets else 'no secret: signatures unchecked'})"
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
