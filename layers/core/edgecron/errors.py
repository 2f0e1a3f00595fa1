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


class RateLimited(ApiError):
    status = 429
    code = "RATE_LIMITED"


class StoredItemUnreadable(ApiError):
    """A stored item this release cannot map to its entity (an attribute missing, or a value it does
    not know, as a newer release may write before a rollback). Not the caller's doing: a 500 that
    says which item, where a read of that item alone was asked for; walks and lists leave it out."""

    status = 500
    code = "STORED_ITEM_UNREADABLE"

    def __init__(self, kind: str, item_id: str, app_id: str, reason: str) -> None:
        super().__init__(f"{kind} {item_id} is stored in a form this release cannot read")
        self.kind = kind
        self.item_id = item_id
        self.app_id = app_id
        self.reason = reason
