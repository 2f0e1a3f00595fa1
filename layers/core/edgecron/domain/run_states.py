"""Task Run states (brief §8) and the transitions each operation may make."""

from __future__ import annotations

from typing import Final, Literal

RunStatus = Literal["pending", "running", "success", "failed", "retry_scheduled", "dead_letter", "cancelled"]
Source = Literal["direct", "schedule", "event"]

PENDING: Final = "pending"
RUNNING: Final = "running"
SUCCESS: Final = "success"
FAILED: Final = "failed"
RETRY_SCHEDULED: Final = "retry_scheduled"
DEAD_LETTER: Final = "dead_letter"
CANCELLED: Final = "cancelled"

ALL: Final = (PENDING, RUNNING, SUCCESS, FAILED, RETRY_SCHEDULED, DEAD_LETTER, CANCELLED)
WAITING: Final = (PENDING, RETRY_SCHEDULED)  # may be claimed by a worker, or cancelled
TERMINAL: Final = (SUCCESS, FAILED, DEAD_LETTER, CANCELLED)
CANCELLABLE: Final = WAITING
REPLAYABLE: Final = (DEAD_LETTER,)


def is_terminal(status: str) -> bool:
    return status in TERMINAL


def can_cancel(status: str) -> bool:
    return status in CANCELLABLE
