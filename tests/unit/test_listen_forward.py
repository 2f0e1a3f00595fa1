"""`edgecron listen --forward-to`: a delivery is passed on, headers and body intact, to the one URL
given, and the listener answers with what that URL answers (a redirect is not followed)."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from fractions import Fraction

import pytest
import requests

from edgecron.domain.signing import new_secret, webhook_headers
from edgecron_cli.commands.listen import Listener, Script, make_server
from edgecron_testing.receiver import Receiver, Reply


@pytest.fixture
def target() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def serve(listener: Listener) -> Iterator[str]:
    server = make_server(listener, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_delivery_is_forwarded_and_answered_with_the_targets_answer(target: Receiver) -> None:
    target.script("/app", Reply(status=202, body=b"queued"))
    secret = new_secret()
    lines: list[str] = []
    listener = Listener([secret], Script(), forward_to=target.url("/app"), echo=lines.append)
    for base in serve(listener):
        body = b'{"hello": "world"}'
        headers = webhook_headers([secret], "run_forwarded", int(time.time()), body)
        answer = requests.post(f"{base}/hook", data=body, headers=headers, timeout=10)
        assert (answer.status_code, answer.content) == (202, b"queued")
    (got,) = target.received("/app")
    assert got.body == b'{"hello": "world"}' and got.headers["webhook-id"] == "run_forwarded"
    assert "verified" in lines[0] and "-> 202" in lines[0]


def test_a_scripted_failure_is_not_forwarded_and_a_redirect_is_not_followed(target: Receiver) -> None:
    target.script("/moved", Reply(status=302, headers={"location": target.url("/elsewhere")}))
    listener = Listener([], Script(fail_rate=Fraction(1, 2)), forward_to=target.url("/moved"), echo=[].append)
    for base in serve(listener):
        first = requests.post(f"{base}/hook", data=b"{}", timeout=10, allow_redirects=False)
        second = requests.post(f"{base}/hook", data=b"{}", timeout=10, allow_redirects=False)
        assert (first.status_code, second.status_code) == (503, 302)
    assert len(target.received("/moved")) == 1 and target.received("/elsewhere") == []


def test_a_target_that_does_not_answer_is_a_502() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/gone"
    listener = Listener([], Script(), forward_to=url, echo=[].append)
    for base in serve(listener):
        assert requests.post(f"{base}/hook", data=b"{}", timeout=10).status_code == 502


@pytest.mark.parametrize(
    "header, value", [("content-length", "-1"), ("content-length", "1e3"), ("transfer-encoding", "chunked")]
)
def test_a_body_without_a_readable_length_is_a_400_and_the_connection_closes(header: str, value: str) -> None:
    lines: list[str] = []
    listener = Listener([], Script(), echo=lines.append)
    for base in serve(listener):
        host, port = base.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        connection.putrequest("POST", "/hook")
        connection.putheader(header, value)
        connection.endheaders()
        response = connection.getresponse()
        assert response.status == 400 and response.getheader("connection") == "close"
        connection.close()
    assert lines == []  # not counted as a delivery


def test_stop_retries_marks_failures_only() -> None:
    assert Script(stop_retries=True).headers_for(503) == {"edgecron-retry": "stop"}
    assert Script(stop_retries=True).headers_for(204) == {}
    assert Script().headers_for(503) == {}


def test_a_scripted_failure_asks_edgecron_to_stop_retrying_over_http() -> None:
    listener = Listener([], Script(fail_rate=Fraction(1, 2), stop_retries=True), echo=[].append)
    for base in serve(listener):
        first = requests.post(base + "/hook", data=b"{}", timeout=5)
        second = requests.post(base + "/hook", data=b"{}", timeout=5)
        assert (first.status_code, first.headers.get("edgecron-retry")) == (503, "stop")
        assert (second.status_code, second.headers.get("edgecron-retry")) == (200, None)
