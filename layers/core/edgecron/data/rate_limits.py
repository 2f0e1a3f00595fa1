"""An App's request-rate windows: one item per App and second in the idempotency table
(`rate#<app_id>#<second>`), whose `granted` counts the requests the API containers took from it.
A container takes a share of the second's budget at once (services/rate_limits.py), so the table
sees one write per share, not per request."""

from __future__ import annotations

from pynamodb.exceptions import UpdateError

from edgecron.data.models import IdempotencyModel

M = IdempotencyModel
KEEP_SEC = 120  # a window's item expires (TTL) this long after its second


def take(app_id: str, second: int, wanted: int, limit: int) -> int:
    """Take `wanted` requests of the App's budget of `limit` for `second` (Unix seconds), or 1 if
    fewer than `wanted` are left; how many were taken (0: the second's budget is spent)."""
    for share in dict.fromkeys((wanted, 1)):
        try:
            M(idem_key=f"rate#{app_id}#{second}").update(
                actions=[M.granted.add(share), M.expires_at.set(second + KEEP_SEC)],
                condition=M.granted.does_not_exist() | (M.granted <= limit - share),
            )
            return share
        except UpdateError as exc:
            if exc.cause_response_code != "ConditionalCheckFailedException":
                raise
    return 0
