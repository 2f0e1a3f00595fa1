"""A schedule's turn under an overlap policy (SKIP, BUFFER_ONE): the Fire that holds it (stored as
`turn_at`) and the one buffered behind it (`next_turn_at`). When the holder
settles, it gives the turn to the buffered Fire and sends that Fire's admission to the fan-out
function, which starts it like any gated Fire; nothing here dispatches, so settling a Fire (which
releases its turn) never depends on the dispatch that settles Fires."""

from __future__ import annotations

from edgecron.config import get_settings
from edgecron.data import fires as fire_data
from edgecron.data import schedules as schedule_data
from edgecron.data.queues import MAX_DELAY_SEC, send_fire_gate
from edgecron.domain.fires import Fire
from edgecron.domain.overlap import Turn, next_to_start
from edgecron.domain.vocabulary import ScheduleStatus


def send_gate(fire: Fire, now_ms: int, *, near_only: bool = False) -> None:
    """Send the message that admits a gated Fire at its due time (the fan-out function decides).
    `near_only`: only if that time is within the look-ahead (the scan's re-drive of one whose
    message was lost sends it again on the tick that sees it due)."""
    wait_ms = fire.due_ms - now_ms
    if near_only and wait_ms > get_settings().lookahead_ms:
        return
    delay = min(MAX_DELAY_SEC, max(0, wait_ms // 1000))
    send_fire_gate(fire.schedule_id, fire.fire_at, fire.app_id, delay)


def release(fire: Fire, now_ms: int) -> None:
    """A Fire admitted under an overlap policy settled: free the schedule's turn, or hand it to the
    buffered Fire and send its admission (unless the schedule stopped: its pause cancels it). The
    fan-out function starts it, like any gated Fire, wherever the settle happened (a worker, the
    scan, a pause)."""
    if fire.overlap is None or fire.admitted_at is None:
        return
    schedule = schedule_data.get(fire.app_id, fire.schedule_id, consistent=True)
    fire_at_ms = fire.fire_at
    if schedule is None or schedule.turn_at is None or int(schedule.turn_at) != fire_at_ms:
        return  # the turn moved on (a re-driven admission found this Fire settled and took it)
    buffered_at = None if schedule.next_turn_at is None else int(schedule.next_turn_at)
    buffered = fire_data.get(fire.schedule_id, buffered_at) if buffered_at is not None else None
    start_at = next_to_start(
        Turn(
            running_at=fire_at_ms,
            buffered_at=buffered_at,
            buffered_waiting=buffered is not None and buffered.waits_for_admission,
        )
    )
    if not schedule_data.release_turn(schedule, fire_at_ms, start_at, buffered_at):
        return  # moved meanwhile: whoever moved it owns what comes next
    if start_at is not None and buffered is not None and schedule.status == ScheduleStatus.ACTIVE:
        send_gate(buffered, now_ms)  # the fan-out function admits it: the turn is its own
