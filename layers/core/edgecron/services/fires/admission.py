"""Overlap policies at a Fire's due time. A cron Fire of a schedule whose `overlap_policy` is SKIP
or BUFFER_ONE is created without runs and admitted when it is due (a FanoutQueue message delayed
to that time): the schedule's turn says which Fire started last under the policy
(`turn_at`) and which one waits behind it (`next_turn_at`); the pure decision is
`edgecron.domain.overlap.admit`. Every step is a conditional write, so a decision retried after a
crash finds the place it took. When the Fire holding the turn settles, it hands the turn to the
buffered Fire and sends its admission; if that worker dies in between, the scan re-drives the
buffered Fire (it waits in `open_fire_keys` without `started_at`), whose admission then finds the
turn free (or its own).

A SKIPPED Fire has no runs, is not a missed fire (no `edgecron.fire.missed`) and does not count
toward auto-pause. ALLOW schedules never come here: nothing is read or written for them."""

from __future__ import annotations

from edgecron import clock
from edgecron.data import fires as fire_data
from edgecron.data import schedules as schedule_data
from edgecron.domain.fires import Fire
from edgecron.domain.overlap import Admission, Turn, admit
from edgecron.domain.schedules import Schedule
from edgecron.domain.vocabulary import FireStatus, OverlapPolicy
from edgecron.observability import logger
from edgecron.services.fires import dispatch, settle, turns

EARLY_MS = 1_000  # SQS delays are whole seconds: a gate message may arrive this much early
ATTEMPTS = 3  # a decision whose turn write lost a race reads the turn again


def skipped_reason(running_at: int | None) -> str:
    since = clock.iso_ms(running_at) if running_at is not None else "an earlier time"
    return f"skipped: the fire of {since} still had open runs (overlap_policy SKIP or BUFFER_ONE)"


def admit_due(schedule_id: str, fire_at_ms: int, app_id: str) -> str:
    """Start, buffer or skip the gated Fire at `fire_at_ms`; returns what happened (started |
    buffered | skipped | early | stopped | ignored). Raises when the turn keeps changing under it
    (SQS delivers the message again)."""
    for _ in range(ATTEMPTS):
        outcome = _admit_once(schedule_id, fire_at_ms, app_id, clock.to_ms(clock.now()))
        if outcome != "retry":
            return outcome
    raise RuntimeError(f"the turn of {schedule_id} kept changing")


def _turn(schedule: Schedule) -> tuple[Turn, Fire | None, Fire | None]:
    """The schedule's turn as stored, with the Fires it names (read strongly consistent)."""
    running_at = None if schedule.turn_at is None else int(schedule.turn_at)
    buffered_at = None if schedule.next_turn_at is None else int(schedule.next_turn_at)
    running = fire_data.get(schedule.schedule_id, running_at) if running_at is not None else None
    buffered = fire_data.get(schedule.schedule_id, buffered_at) if buffered_at is not None else None
    turn = Turn(
        running_at=running_at,
        running_open=running is not None and running.is_open,
        buffered_at=buffered_at,
        buffered_waiting=buffered is not None and buffered.waits_for_admission,
    )
    return turn, running, buffered


def _admit_once(schedule_id: str, fire_at_ms: int, app_id: str, now_ms: int) -> str:
    fire = fire_data.get(schedule_id, fire_at_ms)
    if fire is None or fire.app_id != app_id or not fire.is_open or fire.overlap is None:
        return "ignored"  # settled (skipped, cancelled, ...) or unknown
    schedule = schedule_data.get(app_id, schedule_id, consistent=True)
    if schedule is not None and fire.admitted_at is None and fire.due_ms > now_ms + EARLY_MS:
        turns.send_gate(fire, now_ms)  # decided at its due time: a resume or an edit may come first
        return "early"
    if schedule is None or schedule.paused_at(fire.fire_at):
        settle.cancel_fire(fire, now_ms, dispatch.STOPPED)
        return "stopped"
    if fire.admitted_at is None and not fire.manual and schedule.withholds(fire_at_ms, fire.created_at):
        settle.cancel_fire(fire, now_ms, settle.EDITED)
        return "stopped"
    if fire.admitted_at is not None:  # admitted before: make sure its runs went out
        dispatch.start_admitted(schedule, fire, now_ms)
        return "started"
    turn, running, _ = _turn(schedule)
    decision = admit(OverlapPolicy(fire.overlap), fire_at_ms, turn)
    if decision is Admission.HAND_OVER and running is not None:
        turns.release(running, now_ms)  # what the worker that settled it did not live to do
        return "retry"
    if decision is Admission.START:
        if turn.running_at != fire_at_ms and not schedule_data.take_turn(
            schedule, fire_at_ms, turn.running_at
        ):
            return "retry"
        return _start(schedule, fire, now_ms)
    if decision is Admission.SKIP:
        if settle.settle_as(
            fire, FireStatus.SKIPPED, now_ms, skipped_reason(turn.running_at), unadmitted=True
        ):
            logger.info("fire skipped: the previous one is still open", extra={"schedule_id": schedule_id})
        return "skipped"
    if turn.buffered_at != fire_at_ms and not schedule_data.wait_for_turn(
        schedule, fire_at_ms, turn.buffered_at
    ):
        return "retry"
    fire_data.mark_buffered(fire)
    # the running Fire may have settled after it was read and before this one took its place: its
    # release did not see this one, so look again and take the turn if it is free by now
    if running is not None:
        current = fire_data.get(schedule_id, running.fire_at)
        if current is None or not current.is_open:
            return "retry"
    return "buffered"


def _start(schedule: Schedule, fire: Fire, now_ms: int) -> str:
    admitted = fire_data.admit(fire, now_ms)
    if admitted is None:
        current = fire_data.get(fire.schedule_id, fire.fire_at)
        if current is None or not current.is_open or current.admitted_at is None:
            return "ignored"
        fire = current
    else:
        fire = admitted
    dispatch.start_admitted(schedule, fire, now_ms, admitted_now=admitted is not None)
    return "started"
