"""The one rule for a waiting run's `wake` entry (when the scan looks at it again)."""

from __future__ import annotations

from edgecron.domain.wake import wake_entry, wake_time

DUE, AFTER = 1_000_000, 300_000


def test_a_sent_run_is_looked_at_again_after_its_message_could_have_been_lost() -> None:
    assert wake_time(DUE, sent=True, redispatch_after_ms=AFTER) == DUE + AFTER


def test_a_run_still_to_be_sent_is_looked_at_at_its_due_time() -> None:
    assert wake_time(DUE, sent=False, redispatch_after_ms=AFTER) == DUE


def test_a_sent_run_the_check_of_recent_runs_still_reads_needs_no_entry() -> None:
    assert wake_entry(DUE, sent=True, checked_later=True, redispatch_after_ms=AFTER) is None
    assert wake_entry(DUE, sent=True, checked_later=False, redispatch_after_ms=AFTER) == DUE + AFTER


def test_a_run_still_to_be_sent_keeps_its_entry_whatever_the_check() -> None:
    assert wake_entry(DUE, sent=False, checked_later=True, redispatch_after_ms=AFTER) == DUE
