"""What a failed call raises: the API's own error (code, message, field), or no usable answer at all."""

from __future__ import annotations


class EdgeCronError(Exception):
    """Base of every error the client raises."""


class ApiError(EdgeCronError):
    """The API answered with an error status and (normally) `{"error": {code, message, field}}`.

    `retry_after` is the wait in seconds the API asked for (429/503 with Retry-After), when it did."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after

    def __str__(self) -> str:
        text = f"{self.code}: {self.message}"
        return f"{text} (field: {self.field})" if self.field else text


class TransportError(EdgeCronError):
    """No usable answer: connection refused, timeout, a redirect, or a body that is not the API's JSON."""
