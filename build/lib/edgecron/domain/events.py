"""An Event: a business event an App published, and how far its fan-out has got."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgecron.domain.vocabulary import FanoutStatus


@dataclass(frozen=True)
class Event:
    app_id: str
    event_id: str
    name: str
    created_at: int
    payload: Any = None
    idempotency_key: str | None = None
    fanout_status: FanoutStatus = FanoutStatus.PENDING
    fanout_error: str | None = None  # why the fan-out stopped (failed only)
    # The matched Endpoints live in fan-out pages; only Events stored before pages list them here.
    endpoint_ids: tuple[str, ...] | None = None
    matched_count: int | None = None
    page_count: int | None = None  # fan-out pages recorded so far
    expires_at: int | None = None

    @property
    def matched(self) -> int:
        """How many Endpoints the fan-out matched so far."""
        if self.matched_count is not None:
            return self.matched_count
        return len(self.endpoint_ids or ())
