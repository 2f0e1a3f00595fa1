"""The rule for an Endpoint's custom request headers: the one definition, used when an Endpoint is
created or updated and again when a delivery is sent (a header stored by an older version may break it).

Pure module. A header is acceptable when:

* its name is an RFC 9110 token (section 5.1: ``!#$%&'*+-.^_`|~``, digits and ASCII letters),
  1 to 128 characters, and not a name EdgeCron sets or that controls the connection itself
  (``webhook-*``, ``edgecron-*``, ``host``, ``content-length``, ``transfer-encoding`` and the other
  hop-by-hop fields, ``user-agent``, ``expect``);
* its value is at most 1,024 characters of visible ASCII (VCHAR, 0x21-0x7E) with single spaces or tabs
  inside, never at either end (RFC 9110 section 5.5 trims them, so a receiver would not see what was
  stored). CR, LF, NUL and every other control character are refused: they split or truncate the
  request on the wire. obs-text (0x80-0xFF) and any non-ASCII character are refused too: HTTP clients
  send header values as latin-1, so "日本" cannot be sent at all and "é" would arrive as another text.

The problem text never quotes the value: header values are often credentials.
"""

from __future__ import annotations

import re
from typing import Final

MAX_NAME_LENGTH: Final = 128
MAX_VALUE_LENGTH: Final = 1024

RESERVED_PREFIXES: Final = ("webhook-", "edgecron-")
RESERVED_NAMES: Final = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "expect",
        "user-agent",
    }
)

_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# field-content: VCHAR, with SP / HTAB only between visible characters.
_VALUE: Final = re.compile(r"(?:[\x21-\x7e](?:[ \t\x21-\x7e]*[\x21-\x7e])?)?")


def is_reserved(name: str) -> bool:
    """A header EdgeCron sets itself or that belongs to the connection, compared case-insensitively."""
    lower = name.lower()
    return lower in RESERVED_NAMES or lower.startswith(RESERVED_PREFIXES)


def header_problem(name: object, value: object) -> str | None:
    """Why this custom header cannot be sent, or ``None`` when it can."""
    if not isinstance(name, str):
        return "header name must be a string"
    if not 1 <= len(name) <= MAX_NAME_LENGTH or not _TOKEN.fullmatch(name):
        return (
            f"header name must be 1 to {MAX_NAME_LENGTH} token characters "
            "(letters, digits and !#$%&'*+-.^_`|~)"
        )
    if is_reserved(name):
        return f"header {name} is set by EdgeCron or the connection and cannot be overridden"
    if not isinstance(value, str):
        return f"value of header {name} must be a string"
    if len(value) > MAX_VALUE_LENGTH:
        return f"value of header {name} exceeds {MAX_VALUE_LENGTH} characters"
    if _VALUE.fullmatch(value):
        return None
    if any(c in "\r\n\0" for c in value):
        return f"value of header {name} contains CR, LF or NUL"
    if not value.isascii():
        return f"value of header {name} must be ASCII (visible characters, spaces and tabs)"
    if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
        return f"value of header {name} contains a control character"
    return f"value of header {name} must not start or end with whitespace"
