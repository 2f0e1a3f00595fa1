"""An Idempotency-Key record as a create sees it: another request's (Stored), or its own (Claimed)."""

from __future__ import annotations

from dataclasses import dataclass

IN_PROGRESS = "in_progress"
DONE = "done"


@dataclass(frozen=True)
class Stored:
    """Another request holds (or finished) the key."""

    request_hash: str
    status: str
    response_status: int | None
    response_body: str | None


@dataclass(frozen=True)
class Claimed:
    """This request runs the create. `first_ms` is when the key was first claimed (the created
    object's id derives from it); `taken_over` says an earlier request with the key died mid-way,
    so its object may exist already."""

    first_ms: int
    taken_over: bool
