"""The Fire entity: what readers see (a dispatched Fire that is due reads as RUNNING) and the
rules the fire pipeline reads off it (when its runs are due, whether it waits for admission, who
settles it)."""

from __future__ import annotations

import dataclasses

import pytest

from edgecron.domain.fires import Fire
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import FireStatus, RunStatus, Source

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
    assert done.duration_ms(attempted=True) == 250
    assert fire(status=FireStatus.MISSED, finished_at=FIRE_AT).duration_ms(attempted=False) is None


def test_a_fire_begins_at_its_time_and_one_cancelled_before_any_request_never_began() -> None:
    ahead = fire(started_at=FIRE_AT - 60_000)  # dispatched a minute ahead of its time
    assert ahead.began_at(attempted=False) == FIRE_AT
    done = dataclasses.replace(ahead, status=FireStatus.COMPLETED, finished_at=FIRE_AT + 40)
    assert (done.began_at(attempted=True), done.duration_ms(attempted=True)) == (FIRE_AT, 40)
    cancelled = dataclasses.replace(ahead, status=FireStatus.CANCELLED, finished_at=FIRE_AT - 5_000)
    assert cancelled.began_at(attempted=False) is None
    assert cancelled.duration_ms(attempted=False) is None
    late = fire(started_at=FIRE_AT + 3_000, status=FireStatus.COMPLETED, finished_at=FIRE_AT + 3_100)
    assert (late.began_at(attempted=True), late.duration_ms(attempted=True)) == (FIRE_AT + 3_000, 100)


def test_a_fire_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        fire().status = FireStatus.FAILED  # type: ignore[misc]


def test_runs_are_due_at_the_jittered_time_or_at_a_later_admission() -> None:
    assert fire().due_ms == FIRE_AT
    assert fire(due_at=FIRE_AT + 4_000).due_ms == FIRE_AT + 4_000
    buffered = fire(overlap="BUFFER_ONE", due_at=FIRE_AT + 4_000, admitted_at=FIRE_AT + 60_000)
    assert buffered.due_ms == FIRE_AT + 60_000
    assert fire(overlap="SKIP", admitted_at=FIRE_AT - 500).due_ms == FIRE_AT  # admitted early: still its time


def test_only_an_open_gated_fire_not_yet_admitted_waits_for_admission() -> None:
    assert fire(overlap="SKIP").waits_for_admission
    assert fire(overlap="BUFFER_ONE", status=FireStatus.BUFFERED).waits_for_admission
    assert not fire(overlap="SKIP", admitted_at=FIRE_AT).waits_for_admission
    assert not fire(overlap="SKIP", status=FireStatus.SKIPPED).waits_for_admission
    assert not fire().waits_for_admission  # ALLOW: never gated


def test_a_fire_settled_by_its_run_has_one_listed_run_and_no_overlap_policy() -> None:
    assert fire(endpoint_ids=("ep_1",), run_ids=("run_1",)).settled_by_its_run
    assert not fire(endpoint_ids=("ep_1", "ep_2"), run_ids=("run_1", "run_2")).settled_by_its_run
    assert not fire(endpoint_ids=("ep_1",), run_ids=("run_1",), overlap="SKIP").settled_by_its_run
    assert not fire(paged=True, run_count=1).settled_by_its_run


def test_a_broadcast_fire_is_all_counted_once_fanned_out_and_every_run_counted() -> None:
    assert not fire(paged=True, run_count=3, settled_runs=3).all_counted  # pages still coming
    assert not fire(paged=True, run_count=3, settled_runs=2, started_at=FIRE_AT).all_counted
    assert fire(paged=True, run_count=3, settled_runs=3, started_at=FIRE_AT).all_counted
    assert fire(paged=True, run_count=0, started_at=FIRE_AT).all_counted


def _run(status: RunStatus, run_id: str = "run_1") -> TaskRun:
    return TaskRun(
        run_id=run_id,
        app_id="app_1",
        endpoint_id="ep_1",
        source=Source.SCHEDULE,
        status=status,
        deliver_at=FIRE_AT,
        created_at=FIRE_AT,
        updated_at=FIRE_AT + 300,
        finished_at=FIRE_AT + 250,
    )


def test_a_fire_its_run_completed_reads_completed_with_the_runs_end() -> None:
    dispatched = fire(endpoint_ids=("ep_1",), run_ids=("run_1",), started_at=FIRE_AT)
    shown = dispatched.as_run_left_it(_run(RunStatus.SUCCESS))
    assert shown.status == FireStatus.COMPLETED and not shown.is_open
    assert shown.finished_at == FIRE_AT + 250 and shown.duration_ms(attempted=True) == 250


@pytest.mark.parametrize(
    "status", [RunStatus.PENDING, RunStatus.RUNNING, RunStatus.FAILED, RunStatus.CANCELLED]
)
def test_a_fire_whose_run_did_not_complete_reads_as_stored(status: RunStatus) -> None:
    """Only a completion is left unwritten: any other end is settled by a write that counts it."""
    dispatched = fire(endpoint_ids=("ep_1",), run_ids=("run_1",), started_at=FIRE_AT)
    assert dispatched.as_run_left_it(_run(status)) == dispatched


def test_only_a_fire_its_one_run_settles_reads_as_that_run() -> None:
    two = fire(endpoint_ids=("ep_1", "ep_2"), run_ids=("run_1", "run_2"), started_at=FIRE_AT)
    gated = fire(endpoint_ids=("ep_1",), run_ids=("run_1",), overlap="SKIP", started_at=FIRE_AT)
    settled = fire(endpoint_ids=("ep_1",), run_ids=("run_1",), status=FireStatus.FAILED, finished_at=FIRE_AT)
    other = fire(endpoint_ids=("ep_1",), run_ids=("run_1",), started_at=FIRE_AT)
    for f in (two, gated, settled):
        assert f.as_run_left_it(_run(RunStatus.SUCCESS)) == f
    assert other.as_run_left_it(_run(RunStatus.SUCCESS, run_id="run_9")) == other
    assert other.as_run_left_it(None) == other
