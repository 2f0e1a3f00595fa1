"""The Fire entity as readers see it: a dispatched Fire that is due reads as RUNNING."""

from __future__ import annotations

import dataclasses

import pytest

from edgecron.domain.fires import Fire
from edgecron.domain.vocabulary import FireStatus

FIRE_AT = 1_780_000_000_000


def fire(**changes: object) -> Fire:
    base = Fire(
        schedule_id="sch_1", fire_at=FIRE_AT, app_id="app_1", status=FireStatus.SCHEDULED, created_at=0
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_dispatched_fire_reads_as_running_from_its_fire_time_on() -> None:
    dispatched = fire(started_at=FIRE_AT)
    assert dispatched.shown_status(FIRE_AT - 1) == FireStatus.SCHEDULED  # dispatched ahead, not due yet
    assert dispatched.shown_status(FIRE_AT) == FireStatus.RUNNING


def test_an_undispatched_or_settled_fire_reads_as_stored() -> None:
    assert fire().shown_status(FIRE_AT + 1) == FireStatus.SCHEDULED
    done = fire(status=FireStatus.COMPLETED, started_at=FIRE_AT, finished_at=FIRE_AT + 250)
    assert done.shown_status(FIRE_AT + 1) == FireStatus.COMPLETED
    assert done.duration_ms == 250
    assert fire(status=FireStatus.MISSED, finished_at=FIRE_AT).duration_ms is None


def test_a_fire_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        fire().status = FireStatus.FAILED  # type: ignore[misc]
