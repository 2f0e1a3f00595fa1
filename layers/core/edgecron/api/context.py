"""Per-request state set by the auth middleware (a ContextVar, so concurrent resolvers never mix)."""

from __future__ import annotations

from contextvars import ContextVar

from edgecron import clock
from edgecron.domain.vocabulary import KeyRole
from edgecron.errors import Unauthorized

_app_id: ContextVar[str | None] = ContextVar("edgecron_app_id", default=None)
_admin: ContextVar[bool] = ContextVar("edgecron_admin", default=False)
_time_left_ms: ContextVar[int | None] = ContextVar("edgecron_time_left_ms", default=None)
_started: ContextVar[float | None] = ContextVar("edgecron_request_started", default=None)
#: Lambda's largest function timeout: no invocation runs longer, whatever its configuration.
MAX_INVOCATION_MS = 900_000


def set_app_id(app_id: str | None, *, admin: bool = False) -> None:
    _app_id.set(app_id)
    _admin.set(admin)


def current_role() -> KeyRole:
    """Which kind of key made the request (the routes that accept either kind ask)."""
    if _admin.get():
        return KeyRole.ADMIN
    current_app_id()  # 401 without an App key
    return KeyRole.APP


def current_app_id() -> str:
    """The App of the calling API key; routes use it for every read and write."""
    app_id = _app_id.get()
    if app_id is None:
        raise Unauthorized("missing or invalid API key")
    return app_id


def set_time_left(ms: int | None) -> None:
    _time_left_ms.set(ms)
    _started.set(clock.monotonic())


def time_left_ms() -> int:
    """How long this invocation may still run: Lambda stops it at the function's configured Timeout
    (its context counts down from it); without a context, Lambda's maximum."""
    ms = _time_left_ms.get()
    return MAX_INVOCATION_MS if ms is None else ms


def bulk_deadline(work_ms: int) -> float:
    """The `clock.monotonic()` time by which a bulk route stops starting new work: `work_ms` after the
    request started, and never later than a third of the time the invocation had left, so the answer
    leaves well inside the function's timeout whatever is stored."""
    started = _started.get()
    started = clock.monotonic() if started is None else started
    return started + min(work_ms, time_left_ms() / 3) / 1000
