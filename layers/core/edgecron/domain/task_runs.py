"""The Task Run entity: one delivery of a payload to one Endpoint, as the data layer returns it
(data/runs.py owns its keys, its partition and its index entries)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgecron.domain.vocabulary import RunStatus, Source

MAX_RUN_DELAY_SEC = 365 * 86_400  # how far ahead a direct run may be due (delay_sec or deliver_at)


@dataclass(frozen=True)
class TaskRun:
    run_id: str  # time-ordered: a schedule run's sorts by its fire time
    app_id: str
    endpoint_id: str
    source: Source
    status: RunStatus
    deliver_at: int  # when its next attempt is due
    created_at: int
    updated_at: int
    source_id: str | None = None  # the schedule or the event it came from
    fire_at: int | None = None  # a schedule run's fire time
    payload: Any = None
    retry_policy_id: str | None = None  # a schedule's override; else the Endpoint's
    attempt_count: int = 0  # attempts in the current series
    total_attempts: int = 0  # across replays: the sequence number of its latest attempt
    series: int = 1
    next_retry_at: int | None = None
    wake_at: int | None = None  # when the scan looks at it again (None: no `wake` entry)
    has_wake_entry: bool = False  # the scan's `wake` index lists it
    enqueued_at: int | None = None  # when the scan last sent its message
    claim_token: str | None = None
    claim_expires_at: int | None = None
    claimed_from: RunStatus | None = None  # the status its last claim took it from
    last_error: str | None = None
    last_error_kind: str | None = None
    last_status_code: int | None = None
    finished_at: int | None = None
    expires_at: int | None = None  # epoch seconds: when its history expires
    uncounted: bool = False  # a billable run its worker has yet to count (data/usage.py)
    counted_by_check: bool = False  # the scan's check of recent runs counts it
    settles_fire: bool = False  # the only run of a Fire with no overlap policy: its worker settles it
    flow_held: bool = False  # flow control held it back: late by design, never a missed fire
    flow_slot: int | None = None  # the rate slot (ms) it was granted while it waits for it

    @property
    def last_sent_ms(self) -> int:
        """When its latest message was sent, at the latest: its creation or the scan's last send."""
        return max(self.created_at, self.enqueued_at or 0)
