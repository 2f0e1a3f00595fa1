"""The SSRF rules (edgecron.domain.ssrf): every forbidden range by literal address, the IPv4-embedding
IPv6 forms, inet_aton host forms, public addresses and the operator allow-list."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from edgecron.domain import ssrf

# (address, words the reason must contain)
FORBIDDEN: list[tuple[str, str]] = [
    # private
    ("10.0.0.1", "private address (10.0.0.0/8)"),
    ("10.255.255.255", "private address (10.0.0.0/8)"),
    ("172.16.0.1", "private address (172.16.0.0/12)"),
    ("172.31.255.254", "private address (172.16.0.0/12)"),
    ("192.168.0.1", "private address (192.168.0.0/16)"),
    # loopback
    ("127.0.0.1", "loopback address (127.0.0.0/8)"),
    ("127.255.255.254", "loopback address (127.0.0.0/8)"),
    ("::1", "IPv6 loopback address (::1)"),
    # link-local and metadata
    ("169.254.169.254", "cloud metadata service (169.254.169.254)"),
    ("169.254.0.1", "link-local address (169.254.0.0/16)"),
    ("fe80::1", "IPv6 link-local address (fe80::/10)"),
    ("febf:ffff::1", "IPv6 link-local address (fe80::/10)"),
    ("fd00:ec2::254", "EC2 IPv6 metadata service"),
    ("100.100.100.200", "cloud metadata service (100.100.100.200)"),
    # CGNAT, this-network
    ("100.64.0.1", "carrier-grade NAT address (100.64.0.0/10)"),
    ("100.127.255.254", "carrier-grade NAT address (100.64.0.0/10)"),
    ("0.0.0.0", "'this network' address (0.0.0.0/8)"),
    ("0.1.2.3", "'this network' address (0.0.0.0/8)"),
    # multicast
    ("224.0.0.1", "multicast address (224.0.0.0/4)"),
    ("239.255.255.250", "multicast address (224.0.0.0/4)"),
    ("ff02::1", "IPv6 multicast address (ff00::/8)"),
    ("ff0e::1", "IPv6 multicast address (ff00::/8)"),
    # reserved, unspecified, broadcast
    ("240.0.0.1", "reserved address (240.0.0.0/4)"),
    ("255.255.255.254", "reserved address (240.0.0.0/4)"),
    ("255.255.255.255", "broadcast address (255.255.255.255)"),
    ("::", "unspecified address (::)"),
    ("4000::1", "outside IPv6 global unicast (2000::/3)"),
    ("fec0::1", "IPv6 site-local address (fec0::/10)"),
    ("100::1", "IPv6 discard-only address (100::/64)"),
    # IPv6 ULA
    ("fc00::1", "IPv6 unique local address (fc00::/7)"),
    ("fd12:3456:789a::1", "IPv6 unique local address (fc00::/7)"),
    # documentation, benchmarking, protocol assignments
    ("192.0.2.10", "documentation address (192.0.2.0/24)"),
    ("198.51.100.10", "documentation address (198.51.100.0/24)"),
    ("203.0.113.10", "documentation address (203.0.113.0/24)"),
    ("198.18.0.1", "benchmarking address (198.18.0.0/15)"),
    ("198.19.255.254", "benchmarking address (198.18.0.0/15)"),
    ("192.0.0.8", "IETF protocol assignment (192.0.0.0/24)"),
    ("192.88.99.1", "6to4 relay anycast address (192.88.99.0/24)"),
    ("2001:db8::1", "IPv6 documentation address (2001:db8::/32)"),
    ("3fff::1", "IPv6 documentation address (3fff::/20)"),
    ("2001:2::1", "IPv6 benchmarking address (2001:2::/48)"),
    ("2001:10::1", "IETF protocol assignment (2001::/23)"),
    # IPv4-mapped and IPv4-compatible
    ("::ffff:127.0.0.1", "IPv4-mapped IPv6 address (::ffff:0:0/96) embedding 127.0.0.1, a loopback"),
    ("::ffff:7f00:1", "IPv4-mapped IPv6 address (::ffff:0:0/96) embedding 127.0.0.1"),
    ("::ffff:169.254.169.254", "embedding 169.254.169.254, the cloud metadata service"),
    ("::ffff:10.0.0.1", "embedding 10.0.0.1, a private address"),
    ("::127.0.0.1", "IPv4-compatible IPv6 address (::/96) embedding 127.0.0.1"),
    ("::169.254.169.254", "IPv4-compatible IPv6 address (::/96) embedding 169.254.169.254"),
    ("::ffff:0:127.0.0.1", "IPv4-translated IPv6 address (::ffff:0:0:0/96) embedding 127.0.0.1"),
    # NAT64
    ("64:ff9b::127.0.0.1", "NAT64 address (64:ff9b::/96) embedding 127.0.0.1, a loopback"),
    ("64:ff9b::7f00:1", "NAT64 address (64:ff9b::/96) embedding 127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "NAT64 address (64:ff9b::/96) embedding 169.254.169.254, the cloud metadata"),
    ("64:ff9b:1::7f00:1", "local-use NAT64 address (64:ff9b:1::/48) embedding 127.0.0.1"),
    ("64:ff9b:1:ffff::a9fe:a9fe", "local-use NAT64 address (64:ff9b:1::/48)"),
    # 6to4
    ("2002:7f00:1::", "6to4 address (2002::/16) embedding 127.0.0.1, a loopback"),
    ("2002:7f00:1:1::1", "6to4 address (2002::/16) embedding 127.0.0.1"),
    ("2002:a9fe:a9fe::1", "6to4 address (2002::/16) embedding 169.254.169.254, the cloud metadata"),
    # Teredo: the client address is stored inverted in the last 32 bits
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo address (2001::/32) embedding 127.0.0.1"),
    ("2001:0:4136:e378:8000:63bf:5601:5601", "Teredo address (2001::/32) embedding 169.254.169.254"),
]

# The embedding forms are refused outright, even around a public IPv4 address.
EMBEDDING_PUBLIC: list[tuple[str, str]] = [
    ("::ffff:8.8.8.8", "IPv4-mapped"),
    ("::8.8.8.8", "IPv4-compatible"),
    ("::ffff:0:8.8.8.8", "IPv4-translated"),
    ("64:ff9b::8.8.8.8", "NAT64"),
    ("64:ff9b:1::808:808", "local-use NAT64"),
    ("2002:808:808::1", "6to4"),
    ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", "Teredo"),
]

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "100.63.255.255",  # just below CGNAT
    "100.128.0.0",  # just above CGNAT
    "172.15.255.255",
    "172.32.0.0",
    "192.167.255.255",
    "169.253.255.255",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "2a00:1450:4001::1",
]


@pytest.mark.parametrize(("address", "reason"), FORBIDDEN)
def test_forbidden_address_is_classified_with_its_reason(address: str, reason: str) -> None:
    got = ssrf.classify(address)
    assert got is not None and reason in got, got
    assert ssrf.classify(ipaddress.ip_address(address)) == got
    assert ssrf.is_allowed(address, []) == (False, got)


@pytest.mark.parametrize(("address", "form"), EMBEDDING_PUBLIC)
def test_embedding_forms_are_refused_even_around_a_public_ipv4(address: str, form: str) -> None:
    got = ssrf.classify(address)
    assert got is not None and form in got and "8.8.8.8" in got and "use the IPv4 address itself" in got


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    assert ssrf.classify(address) is None
    assert ssrf.is_allowed(address, []) == (True, None)


def test_scoped_ipv6_is_classified_without_its_zone() -> None:
    assert ssrf.classify(ipaddress.IPv6Address("fe80::1%eth0")) == "an IPv6 link-local address (fe80::/10)"
    assert ssrf.is_allowed(ipaddress.IPv6Address("fe80::1%eth0"), ["fe80::/10"]) == (True, None)


@pytest.mark.parametrize(
    ("address", "form", "inner"),
    [
        ("::ffff:127.0.0.1", "IPv4-mapped", "127.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "NAT64", "169.254.169.254"),
        ("2002:a9fe:a9fe::", "6to4", "169.254.169.254"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo", "127.0.0.1"),
        ("2606:4700:4700::1111", None, None),
        ("127.0.0.1", None, None),
    ],
)
def test_embedded_ipv4_is_extracted(address: str, form: str | None, inner: str | None) -> None:
    got = ssrf.embedded_ipv4(ipaddress.ip_address(address))
    if form is None:
        assert got is None
    else:
        assert got is not None and form in got[0] and str(got[1]) == inner


# --- the operator allow-list ---------------------------------------------------------------------


def test_allow_list_opens_chosen_ranges_only() -> None:
    local = ["127.0.0.0/8", "::1/128"]
    assert ssrf.is_allowed("127.0.0.1", local) == (True, None)
    assert ssrf.is_allowed("127.9.9.9", local) == (True, None)
    assert ssrf.is_allowed("::1", local) == (True, None)
    assert ssrf.is_allowed("10.0.0.1", local) == (False, "a private address (10.0.0.0/8)")
    assert ssrf.is_allowed("169.254.169.254", local)[0] is False
    assert ssrf.is_allowed("8.8.8.8", local) == (True, None)  # public stays allowed


def test_allow_list_narrow_cidr_and_host_bits() -> None:
    assert ssrf.is_allowed("10.1.2.3", ["10.1.0.0/16"]) == (True, None)
    assert ssrf.is_allowed("10.2.0.1", ["10.1.0.0/16"])[0] is False
    assert ssrf.is_allowed("10.1.2.3", ["10.1.2.3/16"]) == (True, None)  # host bits ignored, as in config
    assert ssrf.is_allowed("fd00::5", [ipaddress.ip_network("fd00::/64")]) == (True, None)


def test_allow_list_matches_the_address_as_written() -> None:
    """Allowing 127.0.0.0/8 does not open ::ffff:127.0.0.1 or 64:ff9b::7f00:1; the v6 form needs its own entry."""
    assert ssrf.is_allowed("::ffff:127.0.0.1", ["127.0.0.0/8"])[0] is False
    assert ssrf.is_allowed("64:ff9b::7f00:1", ["127.0.0.0/8"])[0] is False
    assert ssrf.is_allowed("::ffff:127.0.0.1", ["::ffff:127.0.0.0/104"]) == (True, None)
    assert ssrf.is_allowed("127.0.0.1", ["::/0"])[0] is False  # families never cross


def test_parse_cidrs() -> None:
    assert ssrf.parse_cidrs(["127.0.0.0/8", " ::1/128 ", ""]) == [
        ipaddress.ip_network("127.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
    ]
    with pytest.raises(ValueError):
        ssrf.parse_cidrs(["not-a-cidr"])


# --- literal hosts ---------------------------------------------------------------------------------

LITERALS: list[tuple[str, str]] = [
    ("127.0.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("0X7F000001", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("0177.0.0.01", "127.0.0.1"),
    ("0x7f.0x0.0x0.0x1", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),
    ("0", "0.0.0.0"),
    ("2852039166", "169.254.169.254"),
    ("0xa9fea9fe", "169.254.169.254"),
    ("0251.0376.0251.0376", "169.254.169.254"),
    ("0xA9.254.43518", "169.254.169.254"),
    ("169.16689662", "169.254.169.254"),
    ("167772161", "10.0.0.1"),
    ("8.8.8.8", "8.8.8.8"),
    ("134744072", "8.8.8.8"),
    ("[::1]", "::1"),
    ("::1", "::1"),
    ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
    ("[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe"),
    ("[2002:7f00:1::]", "2002:7f00:1::"),
    ("[fe80::1%25eth0]", "fe80::1%eth0"),
    ("[2606:4700:4700::1111]", "2606:4700:4700::1111"),
]

NOT_LITERALS = [
    "example.com",
    "localhost",
    "hooks.example.test",
    "08",  # 8 is not an octal digit
    "0x",
    "256.1.1.1",
    "1.2.3.4.5",
    "4294967296",  # 2**32
    "1.16777216",  # last part too big for three bytes
    "1.2.3.256",
    "1.2.3.-1",
    "127.0.0.1x",
    "0x7f.1.example.com",
    "1" * 5000,  # more digits than int() accepts
    "",
]


@pytest.mark.parametrize(("host", "expected"), LITERALS)
def test_ip_literal_hosts_are_parsed(host: str, expected: str) -> None:
    assert str(ssrf.parse_ip_literal(host)) == expected


@pytest.mark.parametrize("host", NOT_LITERALS)
def test_host_names_are_not_literals(host: str) -> None:
    assert ssrf.parse_ip_literal(host) is None


@pytest.mark.parametrize("host", ["[not-an-ip]", "[127.0.0.1]", "[::1", "::1]"])
def test_malformed_bracketed_literal_is_an_error(host: str) -> None:
    with pytest.raises(ValueError, match="malformed IPv6 literal"):
        ssrf.parse_ip_literal(host)


@pytest.mark.parametrize(
    "host", [h for h, _ in LITERALS if ":" not in h and not h.endswith(".")] + NOT_LITERALS
)
def test_inet_aton_forms_agree_with_the_c_library(host: str) -> None:
    """What resolvers accept (glibc inet_aton) is exactly what parse_inet_aton accepts."""
    try:
        expected: str | None = socket.inet_ntoa(socket.inet_aton(host))
    except (OSError, ValueError):
        expected = None
    got = ssrf.parse_inet_aton(host)
    assert (str(got) if got else None) == expected


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("2130706433", "loopback"),
        ("0x7f.1", "loopback"),
        ("0251.0376.0251.0376", "cloud metadata service (169.254.169.254)"),
        ("0xa9fea9fe", "cloud metadata service (169.254.169.254)"),
        ("167772161", "private address (10.0.0.0/8)"),
        ("[::ffff:169.254.169.254]", "embedding 169.254.169.254"),
    ],
)
def test_unusual_literal_forms_are_classified_by_the_address_they_denote(host: str, reason: str) -> None:
    ip = ssrf.parse_ip_literal(host)
    assert ip is not None
    got = ssrf.classify(ip)
    assert got is not None and reason in got
