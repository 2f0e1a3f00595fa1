"""An App: a tenant, with its optional monthly quota of billable triggers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class App:
    app_id: str
    name: str
    created_at: int
    monthly_quota: int | None = None
    requests_per_sec: int | None = None  # None: the default rate (services/rate_limits.py)
    # the operational events some Endpoint of the App subscribes to (kept by Endpoint writes)
    operational_subscriptions: frozenset[str] = frozenset()
