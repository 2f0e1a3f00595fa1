"""The SSRF guard end to end: Endpoint create/update refusals (by literal IP and by a host name that
resolves to it), loopback deliveries where the allow-list opens loopback, DNS rebinding (the request
goes to the checked address, one lookup per send) and terminal refusals at send time.

Host names resolve through a fake resolver that stands in for the OS resolver (``getaddrinfo``), both
in the guard module and process-wide, so a sender that looked a name up again would get the rebound
answer. Every outbound connection is recorded, and one to a non-loopback address is refused before
any packet leaves: network traffic in these tests only ever goes to loopback.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import urllib3.util.connection

from edgecron.config import Settings, get_settings
from edgecron.services import http_sender, target_guard
from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import Pump

LOCAL = ["127.0.0.0/8", "::1/128"]  # what the test env (and the local stack) allow

# One address in every forbidden range (docs/security.md), and the ones the guard adds.
FORBIDDEN = [
    ("private-10", "10.0.0.1"),
    ("private-172", "172.16.5.4"),
    ("private-192", "192.168.1.1"),
    ("loopback", "127.0.0.1"),
    ("loopback-other", "127.1.2.3"),
    ("metadata", "169.254.169.254"),
    ("link-local", "169.254.10.20"),
    ("cgnat", "100.64.0.1"),
    ("this-network", "0.0.0.0"),
    ("multicast", "224.0.0.251"),
    ("reserved", "240.0.0.1"),
    ("broadcast", "255.255.255.255"),
    ("documentation", "192.0.2.1"),
    ("benchmarking", "198.18.0.1"),
    ("v6-loopback", "::1"),
    ("v6-unspecified", "::"),
    ("v6-ula", "fd00::1"),
    ("v6-ula-fc", "fc00::1"),
    ("v6-link-local", "fe80::1"),
    ("v6-multicast", "ff02::1"),
    ("v6-site-local", "fec0::1"),
    ("mapped-loopback", "::ffff:127.0.0.1"),
    ("mapped-metadata", "::ffff:169.254.169.254"),
    ("compatible-loopback", "::127.0.0.1"),
    ("nat64-loopback", "64:ff9b::7f00:1"),
    ("nat64-metadata", "64:ff9b::a9fe:a9fe"),
    ("nat64-local-use", "64:ff9b:1::a9fe:a9fe"),
    ("6to4-loopback", "2002:7f00:1::1"),
    ("6to4-metadata", "2002:a9fe:a9fe::1"),
    ("teredo-loopback", "2001:0:4136:e378:8000:63bf:80ff:fffe"),
    ("v6-documentation", "2001:db8::1"),
]

# Unusual literal spellings resolvers accept, with the address they denote.
ODD_LITERALS = [
    ("2130706433", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("0xa9fea9fe", "169.254.169.254"),
    ("0251.0376.0251.0376", "169.254.169.254"),
    ("167772161", "10.0.0.1"),
    ("0", "0.0.0.0"),
]


def _is_numeric(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return False
    return True


class FakeDns:
    """Stands in for getaddrinfo: each name answers its queued address lists in turn (the last
    repeats); unknown names do not resolve. Every lookup of a name is recorded."""

    def __init__(self) -> None:
        self.answers: dict[str, list[list[str]]] = {}
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def set(self, name: str, *answers: list[str]) -> None:
        self.answers[name.lower()] = [list(a) for a in answers]

    def lookups(self, name: str) -> int:
        return self.calls.count(name.lower())

    def __call__(
        self, host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> Any:
        name = str(host).lower()
        with self._lock:
            self.calls.append(name)
            queue = self.answers.get(name)
            if not queue:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            ips = queue.pop(0) if len(queue) > 1 else queue[0]
        out = []
        for ip in ips:
            if ":" in ip:
                out.append(
                    (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ip, int(port), 0, 0))
                )
            else:
                out.append((socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ip, int(port))))
        return out


@pytest.fixture
def settings() -> Settings:
    return get_settings()


@pytest.fixture
def production(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    """The production allow-list: empty (nothing private is opened)."""
    monkeypatch.setattr(settings, "allowed_cidrs", [])


@pytest.fixture(autouse=True)
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDns:
    """The fake resolver, in the guard and process-wide (numeric hosts still go to the real call,
    which resolves them without DNS); no real DNS query leaves these tests."""
    fake = FakeDns()
    real = socket.getaddrinfo

    def process_wide(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host is None or _is_numeric(str(host)):
            return real(host, port, *args, **kwargs)
        return fake(host, port, *args, **kwargs)

    monkeypatch.setattr(target_guard, "getaddrinfo", fake)
    monkeypatch.setattr(socket, "getaddrinfo", process_wide)
    return fake


@pytest.fixture(autouse=True)
def connects(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every outbound connection urllib3 opens; one to a non-loopback address fails before connecting."""
    seen: list[tuple[str, int]] = []
    real = urllib3.util.connection.create_connection

    def guarded(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        host, port = address
        seen.append((host, port))
        if not (_is_numeric(host) and ipaddress.ip_address(host.strip("[]").split("%")[0]).is_loopback):
            raise OSError(f"test network guard: refusing to connect to {host}")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(urllib3.util.connection, "create_connection", guarded)
    return seen


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def port_of(receiver: Receiver) -> int:
    return int(receiver.server.server_address[1])


def create_endpoint(key: str, url: str) -> Any:
    return call_api("POST", "/v1/endpoints", key=key, body={"url": url})


def endpoint_count(key: str) -> int:
    return len(call_api("GET", "/v1/endpoints", key=key).body["data"])


def url_host(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


def assert_refused(resp: Any, *words: str) -> None:
    assert resp.status == 400, resp.body
    error = resp.body["error"]
    assert error["code"] == "PARAM_INVALID" and error["field"] == "url", error
    for word in words:
        assert word in error["message"], error


# --- (a) create and update refusals ----------------------------------------------------------------


@pytest.mark.usefixtures("production")
@pytest.mark.parametrize(("label", "ip"), FORBIDDEN, ids=[label for label, _ in FORBIDDEN])
def test_create_refuses_a_forbidden_literal_ip(app_key: str, label: str, ip: str) -> None:
    resp = create_endpoint(app_key, f"https://{url_host(ip)}/hook")
    assert_refused(resp, str(ipaddress.ip_address(ip)), " is ")
    assert endpoint_count(app_key) == 0


@pytest.mark.usefixtures("production")
@pytest.mark.parametrize(("label", "ip"), FORBIDDEN, ids=[label for label, _ in FORBIDDEN])
def test_create_refuses_a_host_name_resolving_to_a_forbidden_address(
    app_key: str, dns: FakeDns, label: str, ip: str
) -> None:
    name = f"{label}.ssrf.test"
    dns.set(name, [ip])
    resp = create_endpoint(app_key, f"https://{name}/hook")
    assert_refused(resp, f"host {name} resolves to {ipaddress.ip_address(ip)}")
    assert endpoint_count(app_key) == 0
    assert dns.lookups(name) == 1


@pytest.mark.usefixtures("production")
@pytest.mark.parametrize(("host", "ip"), ODD_LITERALS)
def test_create_refuses_decimal_octal_and_hex_ipv4_forms(
    app_key: str, dns: FakeDns, host: str, ip: str
) -> None:
    resp = create_endpoint(app_key, f"https://{host}/hook")
    assert_refused(resp, f"{ip} is ")
    assert endpoint_count(app_key) == 0
    assert dns.calls == []  # a literal never reaches DNS


@pytest.mark.usefixtures("production")
def test_one_forbidden_address_among_public_ones_refuses(app_key: str, dns: FakeDns) -> None:
    dns.set("mixed.ssrf.test", ["8.8.8.8", "2606:4700:4700::1111", "169.254.169.254"])
    resp = create_endpoint(app_key, "https://mixed.ssrf.test/hook")
    assert_refused(resp, "resolves to 169.254.169.254", "cloud metadata service")
    assert endpoint_count(app_key) == 0


@pytest.mark.usefixtures("production")
def test_a_public_target_is_accepted_without_connecting(
    app_key: str, dns: FakeDns, connects: list[tuple[str, int]]
) -> None:
    dns.set("public.ssrf.test", ["8.8.8.8", "2606:4700:4700::1111"])
    assert create_endpoint(app_key, "https://public.ssrf.test/hook").status == 201
    assert create_endpoint(app_key, "https://8.8.8.8/hook").status == 201
    assert create_endpoint(app_key, "https://[2606:4700:4700::1111]/hook").status == 201
    assert endpoint_count(app_key) == 3
    assert connects == []


def test_a_host_that_does_not_resolve_is_refused(app_key: str) -> None:
    resp = create_endpoint(app_key, "https://nowhere.ssrf.test/hook")
    assert_refused(resp, "nowhere.ssrf.test does not resolve")
    assert endpoint_count(app_key) == 0


def test_http_is_refused_where_the_operator_does_not_allow_it(
    app_key: str, dns: FakeDns, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    monkeypatch.setattr(settings, "allow_http", False)
    dns.set("public.ssrf.test", ["8.8.8.8"])
    assert_refused(create_endpoint(app_key, "http://public.ssrf.test/hook"), "https")
    assert create_endpoint(app_key, "https://public.ssrf.test/hook").status == 201


@pytest.mark.usefixtures("production")
def test_update_refuses_a_forbidden_url_and_changes_nothing(app_key: str, dns: FakeDns) -> None:
    dns.set("public.ssrf.test", ["8.8.8.8"])
    dns.set("inside.ssrf.test", ["10.1.2.3"])
    ep = create_endpoint(app_key, "https://public.ssrf.test/hook").body
    for url, words in [
        ("https://inside.ssrf.test/hook", ("resolves to 10.1.2.3", "private")),
        ("https://[::ffff:169.254.169.254]/", ("IPv4-mapped", "169.254.169.254")),
        ("https://0x7f.1/", ("127.0.0.1", "loopback")),
    ]:
        resp = call_api(
            "PATCH", f"/v1/endpoints/{ep['id']}", key=app_key, body={"url": url, "description": "x"}
        )
        assert_refused(resp, *words)
    got = call_api("GET", f"/v1/endpoints/{ep['id']}", key=app_key).body
    assert got["url"] == "https://public.ssrf.test/hook" and got.get("description") is None


def test_allow_list_opens_a_chosen_range(
    app_key: str, dns: FakeDns, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    monkeypatch.setattr(settings, "allowed_cidrs", ["10.20.0.0/16"])
    dns.set("partner.ssrf.test", ["10.20.0.5"])
    assert create_endpoint(app_key, "https://partner.ssrf.test/hook").status == 201
    assert create_endpoint(app_key, "https://10.20.30.40/hook").status == 201
    assert_refused(create_endpoint(app_key, "https://10.21.0.1/hook"), "private")
    assert_refused(create_endpoint(app_key, "https://127.0.0.1/hook"), "loopback")


# --- (b) loopback receivers keep working where loopback is allowed ---------------------------------


def run_once(key: str, endpoint_id: str, pump: Pump, quiet_for: float = 0.0) -> dict[str, Any]:
    resp = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id, "payload": {"n": 1}})
    assert resp.status == 201, resp.body
    pump.deliveries(quiet_for=quiet_for)
    return dict(call_api("GET", f"/v1/task-runs/{resp.body['id']}", key=key).body)


def test_loopback_receiver_gets_deliveries_when_allowed(
    app_key: str, receiver: Receiver, pump: Pump, settings: Settings, connects: list[tuple[str, int]]
) -> None:
    assert settings.allowed_cidrs == LOCAL
    ep = create_endpoint(app_key, receiver.url("/loop"))
    assert ep.status == 201, ep.body
    run = run_once(app_key, ep.body["id"], pump)
    assert run["status"] == "success", run
    [got] = receiver.received("/loop")
    assert got.headers["host"] == f"127.0.0.1:{port_of(receiver)}"
    assert connects == [("127.0.0.1", port_of(receiver))]


def test_loopback_receiver_by_host_name_gets_the_name_in_the_host_header(
    app_key: str, receiver: Receiver, pump: Pump, dns: FakeDns
) -> None:
    dns.set("receiver.ssrf.test", ["127.0.0.1"])
    ep = create_endpoint(app_key, f"http://receiver.ssrf.test:{port_of(receiver)}/named")
    assert ep.status == 201, ep.body
    run = run_once(app_key, ep.body["id"], pump)
    assert run["status"] == "success", run
    [got] = receiver.received("/named")
    assert got.headers["host"] == f"receiver.ssrf.test:{port_of(receiver)}"


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def test_ipv6_loopback_receiver(app_key: str, pump: Pump, dns: FakeDns) -> None:
    hosts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            hosts.append(str(self.headers.get("host")))
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    try:
        server = _V6Server(("::1", 0), Handler)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        dns.set("six.ssrf.test", ["::1"])
        for url in (f"http://[::1]:{port}/six", f"http://six.ssrf.test:{port}/six"):
            ep = create_endpoint(app_key, url)
            assert ep.status == 201, ep.body
            assert run_once(app_key, ep.body["id"], pump)["status"] == "success"
        assert hosts == [f"[::1]:{port}", f"six.ssrf.test:{port}"]
    finally:
        server.shutdown()
        server.server_close()


# --- (c) DNS rebinding: the connection goes to the checked address ---------------------------------


def test_send_connects_to_the_checked_address_with_one_lookup(
    receiver: Receiver,
    dns: FakeDns,
    connects: list[tuple[str, int]],
    monkeypatch: pytest.MonkeyPatch,
    settings: Settings,
) -> None:
    """127.0.0.1 (allowed) at check time, 10.0.0.1 on any later lookup. Even with 10.0.0.0/8 opened
    (so a second lookup would not be caught by a second check) the request goes to 127.0.0.1."""
    monkeypatch.setattr(settings, "allowed_cidrs", [*LOCAL, "10.0.0.0/8"])
    port = port_of(receiver)
    dns.set("rebind.ssrf.test", ["127.0.0.1"], ["10.0.0.1"])
    out = http_sender.send("POST", f"http://rebind.ssrf.test:{port}/rebind", {}, b"{}", 2000)
    assert out.result.status_code == 200, out.result
    assert dns.lookups("rebind.ssrf.test") == 1
    assert connects == [("127.0.0.1", port)]
    [got] = receiver.received("/rebind")
    assert got.headers["host"] == f"rebind.ssrf.test:{port}"
    pools = http_sender._adapter().poolmanager.pools.keys()
    assert any(k.key_host == "127.0.0.1" and k.key_server_hostname == "rebind.ssrf.test" for k in pools)


def test_rebinding_through_the_pipeline_one_lookup_per_send(
    app_key: str, receiver: Receiver, pump: Pump, dns: FakeDns, connects: list[tuple[str, int]]
) -> None:
    port = port_of(receiver)
    # lookup 1: endpoint create; lookup 2: the send-time check; anything after: 10.0.0.1
    dns.set("flip.ssrf.test", ["127.0.0.1"], ["127.0.0.1"], ["10.0.0.1"])
    ep = create_endpoint(app_key, f"http://flip.ssrf.test:{port}/flip")
    assert ep.status == 201, ep.body
    assert dns.lookups("flip.ssrf.test") == 1
    run = run_once(app_key, ep.body["id"], pump)
    assert run["status"] == "success", run
    assert dns.lookups("flip.ssrf.test") == 2
    assert len(receiver.received("/flip")) == 1
    assert connects == [("127.0.0.1", port)]
    # the next send looks up once more, gets 10.0.0.1 and is refused before connecting
    run = run_once(app_key, ep.body["id"], pump)
    assert run["status"] == "failed" and run["last_error_kind"] == "refused", run
    assert "resolves to 10.0.0.1" in run["last_error"]
    assert dns.lookups("flip.ssrf.test") == 3
    assert connects == [("127.0.0.1", port)]


def test_adapter_never_sends_an_unchecked_request(connects: list[tuple[str, int]]) -> None:
    request = requests.Request("GET", "http://127.0.0.1:9/x").prepare()
    with pytest.raises(requests.exceptions.InvalidURL, match="without a checked address"):
        http_sender.PinnedAdapter().send(request, timeout=1)
    assert connects == []


# --- (d) refusals at send time are terminal and connect nowhere -----------------------------------


def test_send_time_refusal_after_the_allow_list_is_removed(
    app_key: str,
    receiver: Receiver,
    pump: Pump,
    monkeypatch: pytest.MonkeyPatch,
    settings: Settings,
    connects: list[tuple[str, int]],
) -> None:
    ep = create_endpoint(app_key, receiver.url("/late"))
    assert ep.status == 201, ep.body
    monkeypatch.setattr(settings, "allowed_cidrs", [])
    run = run_once(app_key, ep.body["id"], pump, quiet_for=1.0)
    assert run["status"] == "failed" and run["attempt_count"] == 1, run
    assert run["last_error_kind"] == "refused"
    assert "target refused" in run["last_error"] and "127.0.0.1 is a loopback address" in run["last_error"]
    [attempt] = call_api("GET", f"/v1/task-runs/{run['id']}/attempts", key=app_key).body["data"]
    assert attempt["outcome"] == "failed" and attempt["status_code"] is None
    assert receiver.received("/late") == [] and connects == []


def test_send_time_refusal_when_the_name_now_resolves_inside(
    app_key: str, pump: Pump, dns: FakeDns, connects: list[tuple[str, int]]
) -> None:
    dns.set("moved.ssrf.test", ["8.8.8.8"], ["169.254.169.254"])
    ep = create_endpoint(app_key, "https://moved.ssrf.test/hook")
    assert ep.status == 201, ep.body
    run = run_once(app_key, ep.body["id"], pump, quiet_for=1.0)
    assert run["status"] == "failed" and run["last_error_kind"] == "refused", run
    assert "moved.ssrf.test resolves to 169.254.169.254, the cloud metadata service" in run["last_error"]
    assert connects == []


@pytest.mark.usefixtures("production")
@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://10.0.0.1/x", "target refused: 10.0.0.1 is a private address (10.0.0.0/8)"),
        ("http://[::ffff:127.0.0.1]/x", "target refused: ::ffff:7f00:1 is an IPv4-mapped"),
        ("http://2852039166/x", "target refused: 169.254.169.254 is the cloud metadata service"),
        ("http://inside.ssrf.test/x", "target refused: host inside.ssrf.test resolves to 192.168.0.9"),
    ],
)
def test_send_refuses_without_connecting(
    dns: FakeDns, connects: list[tuple[str, int]], url: str, words: str
) -> None:
    dns.set("inside.ssrf.test", ["192.168.0.9"])
    out = http_sender.send("POST", url, {}, b"{}", 1000)
    assert out.result.status_code is None and out.result.error_kind == "refused"
    assert out.result.error is not None and out.result.error.startswith(words), out.result.error
    assert connects == []


def test_send_refuses_http_once_the_operator_disallows_it(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, connects: list[tuple[str, int]]
) -> None:
    monkeypatch.setattr(settings, "allow_http", False)
    out = http_sender.send("POST", "http://127.0.0.1:9/x", {}, None, 1000)
    assert out.result.error_kind == "refused" and "https" in str(out.result.error)
    assert connects == []


def test_a_name_that_stops_resolving_is_a_retryable_network_error(connects: list[tuple[str, int]]) -> None:
    out = http_sender.send("POST", "https://gone.ssrf.test/x", {}, None, 1000)
    assert (out.result.error, out.result.error_kind) == ("DNS lookup failed (gone.ssrf.test)", "network")
    assert "does not resolve" in str(out.result.error_detail)
    assert connects == []


def test_next_checked_address_is_tried_when_connecting_fails(
    receiver: Receiver, dns: FakeDns, connects: list[tuple[str, int]]
) -> None:
    """Like a normal client, a refused connection moves on to the next checked address."""
    port = port_of(receiver)
    dns.set("two.ssrf.test", ["::1", "127.0.0.1"])  # nothing listens on [::1]:port
    out = http_sender.send("POST", f"http://two.ssrf.test:{port}/two", {}, b"{}", 2000)
    assert out.result.status_code == 200, out.result
    assert connects == [("::1", port), ("127.0.0.1", port)]
    assert len(receiver.received("/two")) == 1


# --- TLS: SNI and certificate verification use the host name, not the address ---------------------


def _issue_certs(tmp: Path, name: str) -> tuple[Path, Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "EdgeCron test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = tmp / "ca.pem", tmp / "leaf.pem", tmp / "leaf.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return ca_file, cert_file, key_file


def test_tls_uses_the_host_name_for_sni_and_verification(
    tmp_path: Path, dns: FakeDns, connects: list[tuple[str, int]]
) -> None:
    ca_file, cert_file, key_file = _issue_certs(tmp_path, "secure.ssrf.test")
    sni: list[str | None] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    context.sni_callback = lambda _sock, name, _ctx: sni.append(name)  # type: ignore[assignment,func-returns-value]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = str(self.headers.get("host")).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    adapter = http_sender.PinnedAdapter(max_retries=0)
    try:
        dns.set("secure.ssrf.test", ["127.0.0.1"])
        dns.set("other.ssrf.test", ["127.0.0.1"])
        target = target_guard.check_url(f"https://secure.ssrf.test:{port}/tls")
        request = http_sender._prepare("GET", target, target.addresses[0], {}, None)
        with adapter.send(request, timeout=5, verify=str(ca_file)) as response:
            assert response.status_code == 200
            assert response.content == f"secure.ssrf.test:{port}".encode()
        assert sni == ["secure.ssrf.test"]

        # the same address under a name the certificate does not carry fails verification
        other = target_guard.check_url(f"https://other.ssrf.test:{port}/tls")
        with pytest.raises(requests.exceptions.SSLError):
            adapter.send(
                http_sender._prepare("GET", other, other.addresses[0], {}, None),
                timeout=5,
                verify=str(ca_file),
            )
        assert sni == ["secure.ssrf.test", "other.ssrf.test"]
        assert connects == [("127.0.0.1", port), ("127.0.0.1", port)]
        assert dns.lookups("secure.ssrf.test") == 1 and dns.lookups("other.ssrf.test") == 1
    finally:
        adapter.close()
        server.shutdown()
        server.server_close()
