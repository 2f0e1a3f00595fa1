"""Where an Attempt is stored: the first one of a run, when small, rides in the run item."""

from __future__ import annotations

from dataclasses import replace

from edgecron.data import attempts
from edgecron.domain.attempts import Attempt

FIRST = Attempt(
    run_id="run_1",
    seq=1,
    app_id="app_1",
    attempt_no=1,
    series=1,
    request_id="r1",
    status_code=200,
    latency_ms=12,
    response_summary="ok",
    error=None,
    error_kind=None,
    outcome="success",
    started_at=1_000,
    trace_id="1-abc",
    expires_at=99,
)


def test_a_small_first_attempt_fits_in_the_run_item() -> None:
    assert attempts.fits_in_run(FIRST)


def test_a_later_attempt_or_a_large_one_is_an_attempt_item() -> None:
    assert not attempts.fits_in_run(replace(FIRST, seq=2, attempt_no=2))
    assert not attempts.fits_in_run(replace(FIRST, response_summary="x" * (attempts.INLINE_TEXT_MAX + 1)))
    half = "y" * (attempts.INLINE_TEXT_MAX // 2 + 1)
    assert not attempts.fits_in_run(replace(FIRST, response_summary=half, error=half))


def test_the_run_item_record_gives_back_the_same_attempt() -> None:
    record = attempts.as_record(FIRST)
    back = attempts._entity(record, FIRST.run_id, FIRST.app_id)
    assert back == replace(FIRST, expires_at=None)  # the run item's own expiry covers it
