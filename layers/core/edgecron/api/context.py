"""Per-request state set by the auth middleware (a ContextVar, so concurrent resolvers never mix)."""

from __future__ import annotations

from contextvars import ContextVar

from edgecron.errors import Unauthorized

_app_id: ContextVar[str | None] = ContextVar("edgecron_app_id", default=None)


def set_app_id(app_id: str | None) -> None:
    _app_id.set(app_id)


def current_app_id() -> str:
    """The App of the calling API key; routes use it for every read and write."""
    app_id = _app_id.get()
    if app_id is None:
        raise Unauthorized("missing or invalid API key")
    return app_id
