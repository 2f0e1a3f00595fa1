"""A fan-out page: one page of an Event's or a broadcast Fire's walk over its App's Endpoints (in
id order), and the Endpoints of it that got a run. Pages are recorded once and in order, so a page
processed twice makes its runs, counts them and continues the walk once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FanoutPage:
    owner_id: str  # the Event's id, or the broadcast Fire's `<schedule_id>#<fire_at>`
    page: int  # 0, 1, 2, ... in Endpoint id order
    app_id: str
    created_at: int
    after: str | None = None  # the page covers the App's Endpoints after this id
    last_endpoint_id: str | None = None  # where the next page starts
    endpoint_ids: tuple[str, ...] = ()  # the Endpoints this page made runs for
    more: bool = False  # a next page follows
    continued: bool = False  # the next page's message was sent

    def resume_point(self) -> tuple[int, str | None] | None:
        """Where a stalled walk whose last recorded page is this one goes on: (page, cursor), or
        None when this page is the last."""
        if not self.more:
            return None
        if not self.continued:
            return self.page, self.after
        return self.page + 1, self.last_endpoint_id
