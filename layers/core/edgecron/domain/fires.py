"""A Fire: one fire time of a Schedule, and the Task Runs it created (listed on the Fire for a
schedule bound to listed Endpoints; in fan-out pages for a broadcast one, `paged`)."""

from __future__ import annotations

from dataclasses import dataclass

from edgecron.domain.vocabulary import FireStatus


@dataclass(frozen=True)
class Fire:
    schedule_id: str
    fire_at: int
    app_id: str
    status: FireStatus
    created_at: int
    endpoint_ids: tuple[str, ...] = ()
    run_ids: tuple[str, ...] = ()
    paged: bool = False
    run_count: int | None = None
    started_at: int | None = None  # dispatched: its runs sent (a broadcast Fire: its last page recorded)
    finished_at: int | None = None
    error: str | None = None
    manual: bool = False  # triggered by hand: its fire time is the trigger's, not a cron time
    due_at: int | None = None  # when its runs are due (fire_at plus the jitter offset); None: fire_at

    @property
    def due_ms(self) -> int:
        return self.fire_at if self.due_at is None else self.due_at

    def shown_status(self, now_ms: int) -> FireStatus:
        """The status a reader sees: a SCHEDULED Fire already dispatched and due is RUNNING."""
        if self.status == FireStatus.SCHEDULED and self.started_at is not None and now_ms >= self.due_ms:
            return FireStatus.RUNNING
        return self.status

    @property
    def duration_ms(self) -> int | None:
        if self.finished_at is None or self.started_at is None:
            return None
        return self.finished_at - self.started_at
