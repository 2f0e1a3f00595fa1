"""Idempotency-Key records: the first request with a key wins; repeats replay its response."""

from __future__ import annotations

from dataclasses import dataclass

from pynamodb.exceptions import DoesNotExist, PutError

from edgecron.data.models import IdempotencyModel

TTL_SEC = 24 * 3600


@dataclass
class Stored:
    request_hash: str
    status: str
    response_status: int | None
    response_body: str | None


def claim(idem_key: str, request_hash: str, now_ms: int) -> Stored | None:
    """Record the key as in progress; return the existing record when another request has it."""
    record = IdempotencyModel(
        idem_key=idem_key,
        request_hash=request_hash,
        status="in_progress",
        created_at=now_ms,
        expires_at=now_ms // 1000 + TTL_SEC,
    )
    cond = IdempotencyModel.idem_key.does_not_exist() | (IdempotencyModel.expires_at < now_ms // 1000)
    try:
        record.save(condition=cond)
        return None
    except PutError as exc:
        if exc.cause_response_code != "ConditionalCheckFailedException":
            raise
    try:
        existing = IdempotencyModel.get(idem_key, consistent_read=True)
    except DoesNotExist:
        return None
    return Stored(
        existing.request_hash,
        existing.status,
        int(existing.response_status) if existing.response_status is not None else None,
        existing.response_body,
    )


def complete(idem_key: str, status: int, body: str) -> None:
    IdempotencyModel(idem_key=idem_key).update(
        actions=[
            IdempotencyModel.status.set("done"),
            IdempotencyModel.response_status.set(status),
            IdempotencyModel.response_body.set(body),
        ]
    )


def release(idem_key: str) -> None:
    """Forget a key whose request failed, so the client may retry with it."""
    IdempotencyModel(idem_key=idem_key).delete()
