"""The HTTP request a delivery sends, as a person may see it: the Endpoint's method and URL, its own
headers, EdgeCron's headers and the body, with every credential redacted.

Pure module. The delivery path (services/delivery.py) builds its headers with :func:`edgecron_headers`,
so what the console shows and what a receiver gets come from one definition. A header value is
redacted when its name says it carries a credential (``authorization``, ``x-api-key``,
``cookie``, ``x-secret-token``, ...); ``webhook-signature`` always is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from edgecron.domain.http_headers import fire_headers
from edgecron.domain.signing import HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP

REDACTED: Final = "[redacted]"
ATTEMPT_HEADER: Final = "edgecron-attempt"
CONTENT_TYPE: Final = "application/json"
# a name with one of these words carries a credential: its value is never shown
_SENSITIVE: Final = re.compile(
    r"auth|token|secret|passw|cookie|signature|credential|session|api[-_]?key|(^|[-_])key($|[-_])",
    re.IGNORECASE,
)


def is_sensitive(name: str) -> bool:
    """Whether a header named `name` is shown as ``[redacted]``."""
    return bool(_SENSITIVE.search(name))


def edgecron_headers(user_agent: str, attempt_no: int, fire: tuple[str, int] | None = None) -> dict[str, str]:
    """The headers EdgeCron adds to every delivery before signing it; `fire`: the schedule id and
    nominal fire time of a schedule's run, which it names (fire_headers)."""
    headers = {"user-agent": user_agent, "content-type": CONTENT_TYPE, ATTEMPT_HEADER: str(attempt_no)}
    if fire is not None:
        headers.update(fire_headers(*fire))
    return headers


def request_body(payload: object, method: str) -> bytes | None:
    """The body a delivery sends: the payload as compact JSON; none for a GET or DELETE without one."""
    if method in {"GET", "DELETE"} and payload is None:
        return None
    return json.dumps(payload, separators=(",", ":")).encode()


@dataclass(frozen=True)
class RequestView:
    method: str
    url: str
    headers: dict[str, str]
    body_bytes: int | None


def request_view(
    method: str,
    url: str,
    custom: Mapping[str, str],
    user_agent: str,
    run_id: str,
    body: bytes | None,
    fire: tuple[str, int] | None = None,
) -> RequestView:
    """The request a run's attempts send, redacted. The two values that differ between attempts are
    named, not invented: ``webhook-timestamp`` is the attempt's start and ``edgecron-attempt`` its
    number in its series."""
    headers = {name: (REDACTED if is_sensitive(name) else value) for name, value in custom.items()}
    headers.update(edgecron_headers(user_agent, 0, fire))
    headers[ATTEMPT_HEADER] = "<attempt number in its series>"
    headers[HEADER_ID] = run_id
    headers[HEADER_TIMESTAMP] = "<the attempt's start, Unix seconds>"
    headers[HEADER_SIGNATURE] = f"v1,{REDACTED}"
    return RequestView(method, url, headers, None if body is None else len(body))
