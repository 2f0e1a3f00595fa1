"""Task Run states and which of them each operation may act on."""

from __future__ import annotations

from typing import Final

from edgecron.domain.vocabulary import RunStatus

WAITING: Final = (RunStatus.PENDING, RunStatus.RETRY_SCHEDULED)  # may be claimed by a worker, or cancelled
TERMINAL: Final = (RunStatus.SUCCESS, RunStatus.FAILED, RunStatus.DEAD_LETTER, RunStatus.CANCELLED)
CANCELLABLE: Final = WAITING
