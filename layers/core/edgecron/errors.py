"""Errors the API turns into `{"error": {"code", "message", "field"}}` responses."""

from __future__ import annotations


class ApiError(Exception):
    status = 400
    code = "BAD_REQUEST"

    def __init__(
        self, message: str, field: str | None = None, *, code: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        if code:
            self.code = code
        if status:
            self.status = status

    def body(self) -> dict[str, object]:
        error: dict[str, object] = {"code": self.code, "message": self.message}
        if self.field:
            error["field"] = self.field
        return {"error": error}


class ParamInvalid(ApiError):
    status = 400
    code = "PARAM_INVALID"


class Unauthorized(ApiError):
    status = 401
    code = "UNAUTHORIZED"


class NotFound(ApiError):
    status = 404
    code = "NOT_FOUND"


class Conflict(ApiError):
    status = 409
    code = "CONFLICT"


class ConcurrentUpdate(Conflict):
    """Another write changed the item between our read and our save, every time we tried."""

    code = "CONCURRENT_UPDATE"


class PayloadTooLarge(ApiError):
    status = 413
    code = "PAYLOAD_TOO_LARGE"


class QuotaExceeded(ApiError):
    status = 429
    code = "QUOTA_EXCEEDED"
