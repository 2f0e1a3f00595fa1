"""When the scan looks at a waiting run again: its `wake` entry. One rule for every writer of it.

A run whose message is on its way (sent now, with an SQS delay, or again after a hold or a retry) is
looked at again `redispatch_after_ms` past its due time, so a lost message is found and sent again. A
run whose message is still to be sent (due beyond what SQS can delay) is looked at at its due time,
when the scan sends it. A run sent at its creation whose id the scan's check of recent runs is still
to read needs no entry at all: the check finds it if its message is lost."""

from __future__ import annotations


def wake_time(due_ms: int, *, sent: bool, redispatch_after_ms: int) -> int:
    """The scan's next look at a run due at `due_ms`: past the due time if its message is sent."""
    return due_ms + redispatch_after_ms if sent else due_ms


def wake_entry(due_ms: int, *, sent: bool, checked_later: bool, redispatch_after_ms: int) -> int | None:
    """The `wake` entry of a run due at `due_ms`; None when its message is sent and the check of
    recent runs is still to read it (`checked_later`), so waiting moves no index key."""
    if sent and checked_later:
        return None
    return wake_time(due_ms, sent=sent, redispatch_after_ms=redispatch_after_ms)
