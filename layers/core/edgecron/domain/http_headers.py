"""The one rule for custom request headers an Endpoint may carry (RFC 9110 field syntax), applied
where headers are accepted and again where they are sent, so a header that can never go on the wire
is refused up front instead of failing every delivery attempt."""

from __future__ import annotations

import re
from typing import Final

# RFC 9110 5.1: field-name = token; tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" /
# "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 9110 5.5 without obs-text: visible ASCII, with SP / HTAB only between visible characters
_VALUE: Final = re.compile(r"([\x21-\x7e]([\x20\x09\x21-\x7e]*[\x21-\x7e])?)?")

RESERVED: Final = frozenset(
    {"webhook-id", "webhook-timestamp", "webhook-signature", "content-length", "host", "transfer-encoding"}
)


def header_problem(name: str, value: str) -> str | None:
    """Why the header `name: value` cannot be sent as given, or None when it can."""
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        return "header name must be an RFC 9110 token (letters, digits and !#$%&'*+-.^_`|~)"
    if name.lower() in RESERVED:
        return f"header {name} is set by EdgeCron and cannot be overridden"
    if not isinstance(value, str) or not _VALUE.fullmatch(value):
        return (
            "header value must be visible ASCII, with spaces or tabs only between characters "
            "(no leading or trailing whitespace, control characters or non-ASCII)"
        )
    return None
