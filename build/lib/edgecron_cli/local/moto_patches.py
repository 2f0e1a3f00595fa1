"""The guard every emulator work-around on moto's (or botocore's) internals goes through.

A work-around replaces or reads something moto does not promise to keep: it was written against one
moto release (MOTO_VERSION, the version the `local` extra pins). Before one is installed, `applies`
checks that moto is that release and that what the work-around touches is still there. When it is
not, the work-around is skipped, moto runs unpatched, and one warning says which work-around, the
version it expects and the one found — once per work-around and process, not on every call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from functools import cache
from importlib import metadata

MOTO_VERSION = "5.2.5"

log = logging.getLogger("edgecron_cli.local")

_warned: set[str] = set()
_lock = threading.Lock()


@cache
def installed_moto_version() -> str:
    """The moto release installed in this environment ("" when moto is not installed)."""
    try:
        return metadata.version("moto")
    except metadata.PackageNotFoundError:
        return ""


# What `applies` compares with; a test swaps it to simulate another moto release.
found_version: Callable[[], str] = installed_moto_version


def applies(name: str, shapes: Iterable[tuple[object, str]] = (), *, versioned: bool = True) -> bool:
    """True when the work-around `name` may be installed: moto is MOTO_VERSION (unless `versioned` is
    False, for a work-around on botocore) and each (owner, attribute) in `shapes` exists. Otherwise
    warn once and return False: the caller leaves moto as it is."""
    found = found_version()
    if versioned and found != MOTO_VERSION:
        _warn_once(name, f"written for moto {MOTO_VERSION}, found moto {found or 'none'}")
        return False
    for owner, attribute in shapes:
        if not hasattr(owner, attribute):
            owner_name = owner.__name__ if isinstance(owner, type) else type(owner).__name__
            where = f"moto {found or 'none'}" if versioned else "the installed botocore"
            _warn_once(name, f"expects {owner_name}.{attribute}, which {where} does not have")
            return False
    return True


def _warn_once(name: str, why: str) -> None:
    with _lock:
        if name in _warned:
            return
        _warned.add(name)
    log.warning("emulator work-around %r not applied (%s): moto runs unpatched", name, why)


def forget_warnings() -> None:
    """Let every work-around warn again (tests)."""
    with _lock:
        _warned.clear()
