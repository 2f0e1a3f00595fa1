"""Delivery errors for people: each failed attempt says what happened in one short sentence
(``error``) and keeps what the HTTP library or the OS said in ``error_detail``, in the sender's
result and in the attempts the API lists."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from edgecron.services import http_sender, target_guard
from edgecron_testing import hostile
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump
from tests.integration.test_delivery import (
    attempts,
    create_run,
    fast_policy,
    finished,
    get_run,
    make_endpoint,
)
from tests.integration.test_ssrf import FakeDns, _issue_certs


@pytest.fixture
def receivers() -> Iterator[list[hostile.HostileReceiver]]:
    started: list[hostile.HostileReceiver] = []
    yield started
    for r in started:
        r.close()


def serve(receivers: list[hostile.HostileReceiver], behaviour: hostile.Behaviour) -> hostile.HostileReceiver:
    r = hostile.HostileReceiver(behaviour, hold_sec=8.0, lifetime_sec=60.0)
    receivers.append(r)
    return r


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def send(url: str, timeout_ms: int = 1000) -> http_sender.HttpOutcome:
    return http_sender.send("POST", url, {}, b"{}", timeout_ms)


def test_connection_refused_names_the_host_and_port() -> None:
    port = closed_port()
    out = send(f"http://127.0.0.1:{port}/hook")
    assert out.result.error == f"connection refused (127.0.0.1:{port})", out.result
    assert out.result.error_kind == "network"
    assert out.result.error_detail is not None and "Connection refused" in out.result.error_detail


def test_a_host_that_does_not_resolve_is_a_dns_lookup_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    dns = FakeDns()  # knows no name
    monkeypatch.setattr(target_guard, "getaddrinfo", dns)
    out = send("http://hooks.nowhere.test/x")
    assert out.result.error == "DNS lookup failed (hooks.nowhere.test)", out.result
    assert out.result.error_kind == "network"
    assert "does not resolve" in str(out.result.error_detail)


def test_a_certificate_from_an_unknown_authority_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dns = FakeDns()
    dns.set("secure.errors.test", ["127.0.0.1"])
    monkeypatch.setattr(target_guard, "getaddrinfo", dns)
    _ca, cert_file, key_file = _issue_certs(tmp_path, "secure.errors.test")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = send(f"https://secure.errors.test:{server.server_address[1]}/hook", timeout_ms=5000)
    finally:
        server.shutdown()
        server.server_close()
    assert str(out.result.error).startswith("TLS certificate not trusted (secure.errors.test: "), out.result
    assert out.result.error_kind == "network"
    assert "CERTIFICATE_VERIFY_FAILED" in str(out.result.error_detail)


def test_a_receiver_slower_than_the_timeout_is_timed_out_after_n_ms(
    receivers: list[hostile.HostileReceiver],
) -> None:
    r = serve(receivers, hostile.hang_after_headers())
    out = send(r.url(), timeout_ms=700)
    assert (out.result.error, out.result.error_kind) == ("timed out after 700 ms", "timeout"), out.result
    assert out.result.error_detail is not None and "total deadline" in out.result.error_detail


@pytest.mark.parametrize(
    ("behaviour", "sentence"),
    [
        (hostile.invalid_status_line(), "response is not HTTP (bad status line)"),
        (hostile.header_line_too_long(), "response status line or header too long"),
        (hostile.too_many_headers(), "response has too many headers"),
        (hostile.broken_gzip(), "response body could not be decoded (Content-Encoding)"),
    ],
    ids=["status", "header", "header-count", "gzip"],
)
def test_an_answer_that_is_not_http_says_what_was_wrong(
    receivers: list[hostile.HostileReceiver], behaviour: hostile.Behaviour, sentence: str
) -> None:
    out = send(serve(receivers, behaviour).url())
    assert (out.result.error, out.result.error_kind) == (sentence, "invalid_response"), out.result
    assert out.result.error_detail


def test_a_redirect_says_so_and_keeps_the_location(receivers: list[hostile.HostileReceiver]) -> None:
    r = serve(receivers, hostile.redirect_to_self())
    out = send(r.url())
    assert out.result.error == f"redirect not followed (HTTP {out.result.status_code})", out.result
    assert str(out.result.error_detail).startswith("Location: ")


def test_the_api_lists_the_sentence_and_keeps_the_detail_apart(app_key: str, pump: Pump) -> None:
    port = closed_port()
    ep = make_endpoint(
        app_key, f"http://127.0.0.1:{port}/gone", retry_policy_id=fast_policy(app_key, attempts=2)
    )
    run = create_run(app_key, ep["id"])
    pump.deliveries(until=finished(app_key, run["id"]))
    listed = attempts(app_key, run["id"])
    assert [a["error"] for a in listed] == [f"connection refused (127.0.0.1:{port})"] * 2
    assert all("Connection refused" in str(a["error_detail"]) for a in listed), listed
    final = get_run(app_key, run["id"])
    assert final["status"] == "dead_letter"
    assert final["last_error"] == (
        f"attempts exhausted (2 of 2): network error: connection refused (127.0.0.1:{port})"
    )


def test_a_success_has_no_error_and_no_detail(app_key: str, pump: Pump) -> None:
    receiver = Receiver()
    try:
        receiver.script("/ok", Reply(200))
        ep = make_endpoint(app_key, receiver.url("/ok"))
        run = create_run(app_key, ep["id"])
        pump.deliveries(until=finished(app_key, run["id"]))
        [attempt] = attempts(app_key, run["id"])
    finally:
        receiver.close()
    assert (attempt["error"], attempt["error_detail"]) == (None, None)
