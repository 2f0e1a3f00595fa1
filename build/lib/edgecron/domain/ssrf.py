"""Which IP addresses a webhook may be delivered to (the SSRF rules). Pure: no DNS, no sockets.

:func:`classify` returns why an address is forbidden, or ``None`` for an ordinary public address.
:func:`is_allowed` applies the operator allow-list (``ALLOWED_CIDRS``) on top: an address inside an
allow-listed CIDR is allowed whatever :func:`classify` says. :func:`parse_ip_literal` turns a URL host
that *is* an address (``[::1]``, ``127.0.0.1``, and the forms a resolver's ``inet_aton`` accepts such as
``2130706433``, ``0x7f.1`` or ``0177.0.0.1``) into that address, so it is classified without DNS.

Forbidden, in the order checked (the first match gives the reason):

* IPv4: 0.0.0.0/8, 10/8, 100.64/10 (CGNAT; 100.100.100.200 is called out as a cloud metadata service),
  127/8, 169.254/16 (169.254.169.254 called out as the cloud metadata service), 172.16/12,
  192.0.0.0/24, the documentation nets 192.0.2/24, 198.51.100/24, 203.0.113/24, 192.88.99/24 (6to4
  relay anycast), 192.168/16, 198.18/15 (benchmarking), 224/4 (multicast), 255.255.255.255 and 240/4.
* IPv6: ``::`` and ``::1``; fc00::/7 (ULA; fd00:ec2::254, the EC2 IPv6 metadata service, called out);
  fe80::/10 and fec0::/10; ff00::/8; 100::/64 (discard); 2001:db8::/32 and 3fff::/20 (documentation);
  2001:2::/48 (benchmarking); 2001::/23 (IETF protocol assignments); anything outside the global
  unicast block 2000::/3.
* IPv6 forms that embed an IPv4 address -- IPv4-mapped ``::ffff:0:0/96``, IPv4-translated
  ``::ffff:0:0:0/96``, IPv4-compatible ``::/96``, NAT64 ``64:ff9b::/96`` and ``64:ff9b:1::/48``, 6to4
  ``2002::/16`` and Teredo ``2001::/32`` -- are refused **outright**, whatever IPv4 address they embed:
  a translator or relay would carry the connection to that IPv4 address, and a public target has no
  reason to be written this way (use its IPv4 address). The reason names the embedded address and,
  when that address is itself forbidden, why.
* Finally any address Python's :mod:`ipaddress` does not consider globally reachable.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from typing import Final

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# (network, reason); the first match wins, so specific entries come before the ranges holding them.
_V4_RULES: Final[tuple[tuple[ipaddress.IPv4Network, str], ...]] = (
    (_V4("169.254.169.254/32"), "the cloud metadata service (169.254.169.254)"),
    (_V4("100.100.100.200/32"), "a cloud metadata service (100.100.100.200)"),
    (_V4("0.0.0.0/8"), "a 'this network' address (0.0.0.0/8)"),
    (_V4("10.0.0.0/8"), "a private address (10.0.0.0/8)"),
    (_V4("100.64.0.0/10"), "a carrier-grade NAT address (100.64.0.0/10)"),
    (_V4("127.0.0.0/8"), "a loopback address (127.0.0.0/8)"),
    (_V4("169.254.0.0/16"), "a link-local address (169.254.0.0/16)"),
    (_V4("172.16.0.0/12"), "a private address (172.16.0.0/12)"),
    (_V4("192.0.0.0/24"), "an IETF protocol assignment (192.0.0.0/24)"),
    (_V4("192.0.2.0/24"), "a documentation address (192.0.2.0/24)"),
    (_V4("192.88.99.0/24"), "a 6to4 relay anycast address (192.88.99.0/24)"),
    (_V4("192.168.0.0/16"), "a private address (192.168.0.0/16)"),
    (_V4("198.18.0.0/15"), "a benchmarking address (198.18.0.0/15)"),
    (_V4("198.51.100.0/24"), "a documentation address (198.51.100.0/24)"),
    (_V4("203.0.113.0/24"), "a documentation address (203.0.113.0/24)"),
    (_V4("224.0.0.0/4"), "a multicast address (224.0.0.0/4)"),
    (_V4("255.255.255.255/32"), "the broadcast address (255.255.255.255)"),
    (_V4("240.0.0.0/4"), "a reserved address (240.0.0.0/4)"),
)

_V6_RULES: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = (
    (_V6("::/128"), "the unspecified address (::)"),
    (_V6("::1/128"), "the IPv6 loopback address (::1)"),
    (_V6("fd00:ec2::254/128"), "the EC2 IPv6 metadata service (fd00:ec2::254)"),
    (_V6("fc00::/7"), "an IPv6 unique local address (fc00::/7)"),
    (_V6("fe80::/10"), "an IPv6 link-local address (fe80::/10)"),
    (_V6("fec0::/10"), "an IPv6 site-local address (fec0::/10)"),
    (_V6("ff00::/8"), "an IPv6 multicast address (ff00::/8)"),
    (_V6("100::/64"), "an IPv6 discard-only address (100::/64)"),
    (_V6("2001:db8::/32"), "an IPv6 documentation address (2001:db8::/32)"),
    (_V6("3fff::/20"), "an IPv6 documentation address (3fff::/20)"),
    (_V6("2001:2::/48"), "an IPv6 benchmarking address (2001:2::/48)"),
)

# IPv6 forms that carry an IPv4 address; checked after the rules above (so :: and ::1 keep their
# own reasons) and before 2001::/23, which holds Teredo.
_MAPPED: Final = _V6("::ffff:0:0/96")
_TRANSLATED: Final = _V6("::ffff:0:0:0/96")
_COMPATIBLE: Final = _V6("::/96")
_NAT64: Final = _V6("64:ff9b::/96")
_NAT64_LOCAL: Final = _V6("64:ff9b:1::/48")
_SIXTOFOUR: Final = _V6("2002::/16")
_TEREDO: Final = _V6("2001::/32")

_IETF_V6: Final = _V6("2001::/23")
_GLOBAL_UNICAST: Final = _V6("2000::/3")


def _low32(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def embedded_ipv4(ip: IPAddress) -> tuple[str, ipaddress.IPv4Address | None] | None:
    """The IPv4-embedding form of an IPv6 address and the IPv4 address it carries, or ``None``.

    For 64:ff9b:1::/48 (local-use NAT64, RFC 8215) the operator picks where the IPv4 address sits;
    the low 32 bits (the /96 layout) are reported. For Teredo it is the client address.
    """
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    plain = ipaddress.IPv6Address(int(ip))  # drop any %scope
    if plain in _MAPPED:
        return "an IPv4-mapped IPv6 address (::ffff:0:0/96)", _low32(plain)
    if plain in _TRANSLATED:
        return "an IPv4-translated IPv6 address (::ffff:0:0:0/96)", _low32(plain)
    if plain in _COMPATIBLE:
        return "an IPv4-compatible IPv6 address (::/96)", _low32(plain)
    if plain in _NAT64:
        return "a NAT64 address (64:ff9b::/96)", _low32(plain)
    if plain in _NAT64_LOCAL:
        return "a local-use NAT64 address (64:ff9b:1::/48)", _low32(plain)
    if plain in _SIXTOFOUR:
        return "a 6to4 address (2002::/16)", plain.sixtofour
    if plain in _TEREDO:
        teredo = plain.teredo
        return "a Teredo address (2001::/32)", teredo[1] if teredo else None
    return None


def _classify_v4(ip: ipaddress.IPv4Address) -> str | None:
    for network, reason in _V4_RULES:
        if ip in network:
            return reason
    if not ip.is_global:
        return "a special-purpose address that is not globally reachable"
    return None


def classify(ip: IPAddress | str) -> str | None:
    """Why ``ip`` must not be a webhook target (e.g. ``"a private address (10.0.0.0/8)"``), or ``None``."""
    addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    if isinstance(addr, ipaddress.IPv4Address):
        return _classify_v4(addr)
    plain = ipaddress.IPv6Address(int(addr))  # drop any %scope
    for network, reason in _V6_RULES:
        if plain in network:
            return reason
    embedded = embedded_ipv4(plain)
    if embedded is not None:
        form, v4 = embedded
        if v4 is None:
            return form
        inner = _classify_v4(v4)
        detail = f"{v4}, {inner}" if inner else f"{v4}; use the IPv4 address itself"
        return f"{form} embedding {detail}"
    if plain in _IETF_V6:
        return "an IETF protocol assignment (2001::/23)"
    if plain not in _GLOBAL_UNICAST:
        return "outside IPv6 global unicast (2000::/3)"
    if not plain.is_global:
        return "a special-purpose address that is not globally reachable"
    return None


def parse_cidrs(cidrs: Iterable[str]) -> list[Network]:
    """Allow-list entries as networks (host bits are ignored, as in configuration validation)."""
    return [ipaddress.ip_network(c.strip(), strict=False) for c in cidrs if c.strip()]


def is_allowed(ip: IPAddress | str, allowed_cidrs: Sequence[str | Network] = ()) -> tuple[bool, str | None]:
    """``(True, None)`` for a target address, ``(False, reason)`` for a forbidden one.

    An address inside an allow-listed CIDR is allowed whatever it is; the allow-list matches the
    address as written, so ``::ffff:127.0.0.1`` needs an IPv6 entry even when 127.0.0.0/8 is listed.
    """
    addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    reason = classify(addr)
    if reason is None:
        return True, None
    plain = addr if isinstance(addr, ipaddress.IPv4Address) else ipaddress.IPv6Address(int(addr))
    for entry in allowed_cidrs:
        network = ipaddress.ip_network(entry, strict=False) if isinstance(entry, str) else entry
        if plain.version == network.version and plain in network:
            return True, None
    return False, reason


# One part of an inet_aton address: hex (0x..), octal (leading 0) or decimal.
_PART = r"(?:0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)"
_INET_ATON = re.compile(rf"{_PART}(?:\.{_PART}){{0,3}}")


def _part_value(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:], 16)
    if len(part) > 1 and part[0] == "0":
        return int(part[1:], 8)
    return int(part)


def parse_inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``inet_aton(3)`` (and so ``getaddrinfo``) makes of ``text``, or ``None``.

    One to four dot-separated parts, each decimal, octal (leading ``0``) or hex (``0x``); the last
    part fills the remaining bytes: ``2130706433``, ``0x7f000001``, ``127.1``, ``0177.0.0.01`` and
    ``0x7f.1`` are all 127.0.0.1.
    """
    if not _INET_ATON.fullmatch(text):
        return None
    try:
        values = [_part_value(p) for p in text.split(".")]
    except ValueError:  # a decimal part too long for int(): no address
        return None
    *head, last = values
    if any(v > 0xFF for v in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = 0
    for v in head:
        number = (number << 8) | v
    number = (number << (8 * (4 - len(head)))) | last
    return ipaddress.IPv4Address(number)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a URL host denotes when it is an IP literal, or ``None`` for a host name.

    Accepts ``[v6]`` (with an optional ``%25zone``), bare IPv6, dotted IPv4 and every ``inet_aton``
    form; one trailing dot is ignored for IPv4 forms. Raises ``ValueError`` for a malformed bracketed
    literal.
    """
    text = host.strip()
    if text.startswith("[") or text.endswith("]"):
        if not (text.startswith("[") and text.endswith("]")):
            raise ValueError(f"malformed IPv6 literal {host!r}")
        inner = text[1:-1].replace("%25", "%")
        try:
            return ipaddress.IPv6Address(inner)
        except ValueError:
            raise ValueError(f"malformed IPv6 literal {host!r}") from None
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.replace("%25", "%"))
        except ValueError:
            return None
    if text.endswith("."):
        text = text[:-1]
    return parse_inet_aton(text)
