"""An App: a tenant, with its optional monthly quota of billable triggers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class App:
    app_id: str
    name: str
    created_at: int
    monthly_quota: int | None = None
