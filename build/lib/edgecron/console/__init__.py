"""The web console's static files, served by the API function under /console.

Every asset ships in the package (no CDN): the console works offline and on API Gateway alike. The
page runs under a strict Content-Security-Policy (scripts and styles from the same origin only, no
inline code), and it talks to the API with the App key the person signs in with."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ASSETS = Path(__file__).parent / "assets"
INDEX = "index.html"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,80}$")


@dataclass(frozen=True)
class Asset:
    name: str
    content_type: str
    body: str


@cache
def _listing() -> frozenset[str]:
    return frozenset(p.name for p in ASSETS.iterdir() if p.is_file() and p.suffix in CONTENT_TYPES)


def asset(name: str) -> Asset | None:
    """The asset called `name`, or None: only names in the shipped listing (no paths, no dot files)."""
    if not _NAME.fullmatch(name) or name not in _listing():
        return None
    return _read(name)


@cache
def _read(name: str) -> Asset:
    path = ASSETS / name
    return Asset(name, CONTENT_TYPES[path.suffix], path.read_text(encoding="utf-8"))
