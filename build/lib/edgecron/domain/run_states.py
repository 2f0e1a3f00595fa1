"""Task Run states and which of them each operation may act on."""

from __future__ import annotations

from typing import Final

from edgecron.domain.vocabulary import RunStatus, Source

__all__ = ["CANCELLABLE", "TERMINAL", "WAITING", "RunStatus", "Source"]

PENDING: Final = RunStatus.PENDING
RUNNING: Final = RunStatus.RUNNING
SUCCESS: Final = RunStatus.SUCCESS
FAILED: Final = RunStatus.FAILED
RETRY_SCHEDULED: Final = RunStatus.RETRY_SCHEDULED
DEAD_LETTER: Final = RunStatus.DEAD_LETTER
CANCELLED: Final = RunStatus.CANCELLED

WAITING: Final = (PENDING, RETRY_SCHEDULED)  # may be claimed by a worker, or cancelled
TERMINAL: Final = (SUCCESS, FAILED, DEAD_LETTER, CANCELLED)
CANCELLABLE: Final = WAITING
