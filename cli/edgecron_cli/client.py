"""The CLI's client: the typed client library (edgecron_client) with the CLI's user agent, and the exit
codes scripts rely on (docs/cli.md). Each call returns the decoded JSON body as the API sent it, so
`--json` prints it unchanged; failures are the library's `ApiError` and `TransportError`.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from edgecron_client import MAX_PAGE, ApiError, EdgeCron, TransportError

__all__ = [
    "EXIT_API_ERROR",
    "EXIT_AUTH",
    "EXIT_CONFLICT",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_SERVER",
    "EXIT_USAGE",
    "MAX_PAGE",
    "ApiError",
    "Client",
    "TransportError",
    "exit_code",
]

EXIT_OK = 0
EXIT_API_ERROR = 1  # any other 4xx; also a failed run for `runs watch`
EXIT_USAGE = 2  # bad flags (typer's default) or nothing configured
EXIT_NOT_FOUND = 3
EXIT_AUTH = 4
EXIT_CONFLICT = 5
EXIT_SERVER = 6  # 5xx, an unreadable answer, or no answer at all (connection refused, timeout)


def _version() -> str:
    for distribution in ("edgecron", "edgecron-client"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return "dev"


def exit_code(error: Exception) -> int:
    """The documented exit code for a failed request."""
    if isinstance(error, ApiError):
        if error.status == 404:
            return EXIT_NOT_FOUND
        if error.status == 401:
            return EXIT_AUTH
        if error.status == 409:
            return EXIT_CONFLICT
        if error.status >= 500:
            return EXIT_SERVER
        return EXIT_API_ERROR
    return EXIT_SERVER


class Client(EdgeCron):
    """The client library as the CLI uses it (one base URL, one bearer key)."""

    def __init__(self, base_url: str, key: str, **options: Any) -> None:
        options.setdefault("user_agent", f"edgecron-cli/{_version()}")
        super().__init__(base_url, key, **options)
