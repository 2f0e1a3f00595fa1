"""The SSRF guard: may EdgeCron deliver to this URL, and to which checked addresses?

:func:`check_url` is called when an Endpoint is created or its URL changed (a refusal is a 400) and
again before every delivery attempt (a refusal is a terminal "refused" failure). It resolves the host
once with ``getaddrinfo`` and refuses the URL when *any* resolved address is forbidden by
:mod:`edgecron.domain.ssrf` (and not opened by the ``ALLOWED_CIDRS`` allow-list), so a DNS answer that
mixes public and private addresses cannot sneak through. The sender then connects only to the
addresses returned here (no second lookup that DNS rebinding could change).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from requests.exceptions import RequestException
from requests.models import PreparedRequest

from edgecron.config import get_settings
from edgecron.domain import ssrf

# The OS resolver, looked up through this module so tests can stand in for DNS here only.
getaddrinfo = socket.getaddrinfo

DEFAULT_PORTS = {"http": 80, "https": 443}


class TargetRefused(ValueError):
    """The URL must not be delivered to; ``str(exc)`` is the reason."""


class TargetUnresolvable(TargetRefused):
    """The host does not resolve. A 400 at create time; at send time a transient network error."""


@dataclass(frozen=True)
class ResolvedTarget:
    """A checked URL: where to connect (``addresses``, in resolver order) and what to call the host.

    ``host`` is the URL host as the HTTP client sees it (IDNA-encoded, no brackets): it goes into the
    ``Host`` header, TLS SNI and certificate verification; ``addresses`` are the only addresses that
    may be connected to.
    """

    url: str  # normalised the way the HTTP client normalises it
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]
    literal: bool  # the host was an IP literal (no DNS)

    @property
    def authority(self) -> str:
        """The ``Host`` header value: host, in brackets for IPv6, and the port when not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


def normalise_url(url: str) -> str:
    """The URL as requests will send it (IDNA host, quoted path), or TargetRefused."""
    prepared = PreparedRequest()
    try:
        prepared.prepare_url(url, None)
    except (RequestException, ValueError, UnicodeError) as exc:
        raise TargetRefused(f"invalid URL: {exc}") from None
    return str(prepared.url)


def check_url(url: str) -> ResolvedTarget:
    """Resolve and check ``url``; raise TargetRefused (or TargetUnresolvable) with a clear reason."""
    settings = get_settings()
    normalised = normalise_url(url)
    try:
        parts = urlsplit(normalised)
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"invalid URL: {exc}") from None
    if scheme not in DEFAULT_PORTS:
        raise TargetRefused("url must use https")
    if scheme == "http" and not settings.allow_http:
        raise TargetRefused("url must use https (http is not allowed by this deployment)")
    if not host:
        raise TargetRefused("url has no host")
    port = port or DEFAULT_PORTS[scheme]
    allowed = ssrf.parse_cidrs(settings.allowed_cidrs)

    try:
        literal = ssrf.parse_ip_literal(host)
    except ValueError as exc:
        raise TargetRefused(str(exc)) from None
    if literal is not None:
        ok, reason = ssrf.is_allowed(literal, allowed)
        if ok and settings.allowed_only and not _in_any(literal, allowed):
            ok, reason = False, "outside ALLOWED_CIDRS, the only ranges this deployment may reach"
        if not ok:
            raise TargetRefused(f"{literal} is {reason}")
        return ResolvedTarget(normalised, scheme, host, port, (str(literal),), literal=True)
    if settings.allowed_only and host.lower() != "localhost":
        # no DNS lookup at all: a sandboxed deployment (the local stack) reaches listed addresses only
        raise TargetRefused(
            f"host {host} is not an IP address in ALLOWED_CIDRS (this deployment reaches only those)"
        )

    addresses = resolve(host, port)
    for address in addresses:
        ok, reason = ssrf.is_allowed(address, allowed)
        if ok and settings.allowed_only and not _in_any(ipaddress.ip_address(address), allowed):
            ok, reason = False, "outside ALLOWED_CIDRS, the only ranges this deployment may reach"
        if not ok:
            raise TargetRefused(f"host {host} resolves to {address}, {reason}")
    return ResolvedTarget(normalised, scheme, host, port, addresses, literal=False)


def _in_any(address: ipaddress.IPv4Address | ipaddress.IPv6Address, networks: Any) -> bool:
    return any(address.version == net.version and address in net for net in networks)


def resolve(host: str, port: int) -> tuple[str, ...]:
    """Every address ``host`` resolves to (TCP), in resolver order, without duplicates."""
    try:
        infos = getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
        raise TargetUnresolvable(f"host {host} does not resolve ({_why(exc)})") from None
    seen: dict[str, None] = {}
    for family, _type, _proto, _canon, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            raise TargetRefused(f"host {host} resolves to a non-IP address")
        address = str(sockaddr[0])
        try:
            parsed = ssrf.parse_ip_literal(address)
        except ValueError:
            parsed = None
        if parsed is None:
            raise TargetRefused(f"host {host} resolves to an unparseable address {address!r}")
        seen.setdefault(str(parsed))
    if not seen:
        raise TargetUnresolvable(f"host {host} does not resolve (no addresses)")
    return tuple(seen)


def _why(exc: BaseException) -> str:
    if isinstance(exc, socket.gaierror) and len(exc.args) > 1:
        return str(exc.args[1])
    return type(exc).__name__
