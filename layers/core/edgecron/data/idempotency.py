"""Idempotency-Key records: the first request with a key wins; repeats replay its response.

A record in progress holds a lease that ends when the request's function invocation must have ended
(Lambda stops it at its timeout); after that a retry with the same key takes the record over, so a
key is never stuck behind a request that died."""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist, PutError

from edgecron.data.conditional import condition_failed, update_if
from edgecron.data.models import IdempotencyModel
from edgecron.domain.idempotency import DONE, IN_PROGRESS, Claimed, Stored

M = IdempotencyModel
TTL_SEC = 24 * 3600


def claim(idem_key: str, request_hash: str, now_ms: int, lease_ms: int) -> Claimed | Stored:
    """Record the key as in progress until `now_ms + lease_ms`, take over a record whose lease ended,
    or return the record another request holds."""
    record = M(
        idem_key=idem_key,
        request_hash=request_hash,
        status=IN_PROGRESS,
        created_at=now_ms,
        lease_until=now_ms + lease_ms,
        expires_at=now_ms // 1000 + TTL_SEC,
    )
    try:
        record.save(condition=M.idem_key.does_not_exist() | (M.expires_at < now_ms // 1000))
        return Claimed(now_ms, taken_over=False)
    except PutError as exc:
        if not condition_failed(exc):
            raise
    try:
        existing = M.get(idem_key, consistent_read=True)
    except DoesNotExist:  # expired and deleted in between: the next request claims it afresh
        return Stored(request_hash, IN_PROGRESS, None, None)
    lease = existing.lease_until  # None: written before leases; it ran for at most one lease
    lapsed = (int(existing.created_at) + lease_ms if lease is None else lease) < now_ms
    if existing.status == IN_PROGRESS and existing.request_hash == request_hash and lapsed:
        held = M.lease_until.does_not_exist() if lease is None else (M.lease_until == lease)
        if update_if(existing, [M.lease_until.set(now_ms + lease_ms)], (M.status == IN_PROGRESS) & held):
            return Claimed(int(existing.created_at), taken_over=True)
    return Stored(
        existing.request_hash,
        existing.status,
        int(existing.response_status) if existing.response_status is not None else None,
        existing.response_body,
    )


def complete(idem_key: str, status: int, body: str) -> None:
    """Store the response to replay; the caller removes what must not be kept (secrets)."""
    M(idem_key=idem_key).update(
        actions=[
            M.status.set(DONE),
            M.response_status.set(status),
            M.response_body.set(body),
            M.lease_until.remove(),
        ]
    )


def release(idem_key: str) -> None:
    """Forget a key whose request stored nothing, so the client may retry with it (another body too)."""
    M(idem_key=idem_key).delete()


def lapse(idem_key: str) -> None:
    """End the lease of a key whose request failed after its object may have been stored: the key
    stays bound to that object's id, and the client's retry takes the record over at once."""
    update_if(M(idem_key=idem_key), [M.lease_until.set(0)], M.status == IN_PROGRESS)
