"""An App's request rate: requests per second over every route and key, set per App by the operator
(`PUT /v1/apps/{app_id}/rate-limit`). Beyond it the API answers 429 with `Retry-After`. An App without
one is bounded only by the HTTP API stage's throttle, which every App shares, and costs nothing here.

The budget of each second is shared by every API container through one DynamoDB item per App and
second (data/rate_limits.py). A container takes a share of it at once (a tenth of the rate, at least
1) and admits requests from its share until it is used, then takes another; when none is left the
container refuses the App's requests for the rest of that second without asking again. So the table
sees about ten writes per App and second at full rate, not one per request, and an App never gets more
than its rate in any second; it may get less when containers hold shares they do not use before the
second ends (at most one share each)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from edgecron.data import apps as app_data
from edgecron.data import rate_limits as data

MAX_REQUESTS_PER_SEC = 100_000
SHARES_PER_SECOND = 10
MAX_REMEMBERED = 10_000  # Apps whose share a container keeps


@dataclass
class _Share:
    second: int
    left: int
    spent: bool  # the second's budget is gone: refuse without asking again


_shares: dict[str, _Share] = {}  # App id -> this container's share of the current second
_lock = threading.Lock()  # the local stack's containers share this module, on threads


def rate_of(app_id: str) -> int | None:
    """The App's request rate as this container knows it (remembered up to 30 s); None = none set."""
    app = app_data.app_for_quota(app_id)
    return app.requests_per_sec if app is not None else None


def admit(app_id: str, now_ms: int) -> int | None:
    """None if the App may make one more request now; else the seconds until it may (Retry-After)."""
    with _lock:
        return _admit(app_id, now_ms)


def _admit(app_id: str, now_ms: int) -> int | None:
    second = now_ms // 1000
    if len(_shares) > MAX_REMEMBERED:
        _shares.clear()
    share = _shares.get(app_id)
    if share is None or share.second != second:
        share = _shares[app_id] = _Share(second, 0, False)
    if share.left == 0 and not share.spent:
        limit = rate_of(app_id)
        if limit is None:
            return None
        share.left = data.take(app_id, second, max(1, limit // SHARES_PER_SECOND), limit)
        share.spent = share.left == 0
    if share.left == 0:
        return 1  # the next second's budget
    share.left -= 1
    return None
