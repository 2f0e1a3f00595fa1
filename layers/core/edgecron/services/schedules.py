"""Schedule use cases for the API: validate strictly, compute the next fire time, and dispatch the
first few seconds at once so a new schedule never waits for the next scan tick; the rest of its
look-ahead window goes to the fan-out function, and whatever that misses to the scan."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from edgecron import clock, ids
from edgecron.config import get_settings
from edgecron.data import endpoints as endpoint_data
from edgecron.data import retry_policies as policy_data
from edgecron.data import schedules as data
from edgecron.data.queues import send_schedule_dispatch
from edgecron.domain import cron
from edgecron.domain.fires import Fire
from edgecron.domain.schedules import Schedule
from edgecron.domain.vocabulary import MissedPolicy, OverlapPolicy, ScheduleStatus
from edgecron.errors import Conflict, NotFound, ParamInvalid
from edgecron.schemas.schedules import ScheduleCreate, ScheduleUpdate
from edgecron.services.fires import dispatch, due_walk, settle
from edgecron.services.retry_policies import DEFAULT_ID
from edgecron.services.task_runs import check_payload

_TIMING = {"cron", "at", "timezone", "start_at", "end_at"}


def _spec(expression: str | None, timezone: str) -> cron.CronSpec | None:
    try:
        if expression is None:
            cron.parse_cron("* * * * *", timezone)  # validates the zone alone
            return None
        return cron.parse_cron(expression, timezone)
    except cron.CronError as exc:
        raise ParamInvalid(str(exc), exc.field) from exc


def _check_fires_left(expression: str | None, timezone: str, now: datetime) -> None:
    """A schedule written with an EventBridge at(...) or cron(...) year that has passed is refused."""
    spec = _spec(expression, timezone)
    if spec is None:
        return
    try:
        cron.check_not_over(spec, now)
    except cron.CronError as exc:
        raise ParamInvalid(str(exc), exc.field) from exc


def _first_fire_ms(spec: cron.CronSpec | None, at: datetime | None, now: datetime) -> int | None:
    if spec is not None:
        nxt = cron.next_fire(spec, now)
        return clock.to_ms(nxt) if nxt else None
    assert at is not None
    try:
        cron.validate_at(at, now)
    except cron.CronError as exc:
        raise ParamInvalid(str(exc), exc.field) from exc
    return max(clock.to_ms(at), clock.to_ms(now))


def _check_refs(app_id: str, endpoint_ids: list[str] | None, retry_policy_id: str | None) -> None:
    for i, endpoint_id in enumerate(endpoint_ids or []):
        if endpoint_data.get(app_id, endpoint_id) is None:
            raise NotFound(f"endpoint {endpoint_id} not found", f"endpoint_ids.{i}")
    if endpoint_ids and len(set(endpoint_ids)) != len(endpoint_ids):
        raise ParamInvalid("endpoint_ids contains duplicates", "endpoint_ids")
    if retry_policy_id and retry_policy_id != DEFAULT_ID and policy_data.get(app_id, retry_policy_id) is None:
        raise ParamInvalid(f"retry policy {retry_policy_id} not found", "retry_policy_id")


def _timed(schedule: Schedule, now: datetime) -> Schedule:
    """The schedule with its next fire time from now, inside the [start_at, end_at] window; a cron
    schedule with no fire time left in it is ENDED, and an ENDED one given fire times again is ACTIVE."""
    spec = _spec(schedule.cron, schedule.timezone)
    at = clock.from_ms(schedule.at) if schedule.at is not None else None
    start, end = schedule.start_at, schedule.end_at
    if start is not None and end is not None and start >= end:
        raise ParamInvalid("start_at must be before end_at", "end_at")
    if schedule.at is not None and (
        (start is not None and schedule.at < start) or (end is not None and schedule.at > end)
    ):
        raise ParamInvalid("at lies outside the start_at/end_at window", "at")
    search_from = now
    if spec is not None and start is not None and start - 1 > clock.to_ms(now):
        search_from = clock.from_ms(start - 1)  # the first fire time at or after start_at
    first = _first_fire_ms(spec, at, search_from if spec is not None else now)
    next_fire_at = schedule.within_window(first)
    status = schedule.status
    if spec is not None and end is not None and next_fire_at is None:
        if status == ScheduleStatus.ACTIVE:
            status = ScheduleStatus.ENDED
    elif status == ScheduleStatus.ENDED:
        status = ScheduleStatus.ACTIVE
    return replace(schedule, next_fire_at=next_fire_at, finished=False, status=status)


def create(app_id: str, req: ScheduleCreate, now: datetime, schedule_id: str | None = None) -> Schedule:
    if (req.cron is None) == (req.at is None):
        raise ParamInvalid("give either cron or at", "cron")
    check_payload(req.payload)
    _check_refs(app_id, req.endpoint_ids, req.retry_policy_id)
    now_ms = clock.to_ms(now)
    schedule = Schedule(
        app_id=app_id,
        schedule_id=schedule_id or ids.new_id("sch", now_ms),
        name=req.name,
        cron=req.cron,
        at=clock.to_ms(req.at) if req.at else None,
        timezone=req.timezone,
        endpoint_ids=tuple(req.endpoint_ids or ()),
        payload=req.payload,
        status=ScheduleStatus(req.status),
        missed_policy=MissedPolicy(req.missed_policy),
        retry_policy_id=req.retry_policy_id,
        start_at=clock.to_ms(req.start_at) if req.start_at else None,
        end_at=clock.to_ms(req.end_at) if req.end_at else None,
        jitter_sec=req.jitter_sec or None,
        overlap_policy=_overlap(req.overlap_policy),
        consecutive_failures=0,
        version=1,
        created_at=now_ms,
        updated_at=now_ms,
    )
    _check_fires_left(schedule.cron, schedule.timezone, now)
    schedule = _timed(schedule, now)
    data.put_new(schedule)
    return kick(schedule, now)


def _overlap(policy: str | None) -> OverlapPolicy | None:
    """The stored overlap policy: None for ALLOW, the default, which reads and writes nothing."""
    return None if policy is None or policy == OverlapPolicy.ALLOW else OverlapPolicy(policy)


def get(app_id: str, schedule_id: str) -> Schedule:
    schedule = data.get_timed(app_id, schedule_id, consistent=True)
    if schedule is None:
        raise NotFound(f"schedule {schedule_id} not found", "id")
    return schedule


def update(app_id: str, schedule_id: str, req: ScheduleUpdate, now: datetime) -> Schedule:
    changes: dict[str, Any] = req.model_dump(exclude_unset=True)
    for field in ("timezone", "endpoint_ids", "missed_policy"):
        if field in changes and changes[field] is None:
            raise ParamInvalid(f"{field} cannot be null", field)
    if "payload" in changes:
        check_payload(changes["payload"])
    _check_refs(app_id, changes.get("endpoint_ids"), changes.get("retry_policy_id"))
    status = changes.pop("status", None)
    for _ in range(5):  # the scan may advance the schedule meanwhile: re-read and re-apply
        read = get(app_id, schedule_id)
        version = read.version
        schedule = replace(
            read, **_edited_fields(read, changes), version=version + 1, updated_at=clock.to_ms(now)
        )
        if _TIMING & changes.keys():
            if {"cron", "timezone"} & changes.keys():
                _check_fires_left(schedule.cron, schedule.timezone, now)
            # fires dispatched ahead under the timing before are withheld at their time if this one
            # has none there (Schedule.withholds): an edit back before then delivers them
            schedule = _timed(replace(schedule, timing_since=clock.to_ms(now)), now)
        if data.save_if_version(schedule, version):
            break
    else:
        raise Conflict("the schedule is changing concurrently; try again", "id")
    if status == ScheduleStatus.PAUSED:
        return pause(app_id, schedule_id, now)
    if status == ScheduleStatus.ACTIVE:
        return resume(app_id, schedule_id, now)
    return kick(schedule, now)


def _edited_fields(schedule: Schedule, changes: dict[str, Any]) -> dict[str, Any]:
    """The stored fields a user's edit (`changes`, the fields the request set) gives the schedule."""
    fields: dict[str, Any] = {}
    if "cron" in changes or "at" in changes:
        # The form given replaces the other; null for the form a schedule does not have changes nothing.
        new_cron = (
            changes["cron"] if "cron" in changes else (schedule.cron if changes["at"] is None else None)
        )
        new_at = changes["at"] if "at" in changes else (schedule.at if changes["cron"] is None else None)
        if (new_cron is None) == (new_at is None):
            raise ParamInvalid("give either cron or at", "cron")
        fields["cron"] = new_cron
        fields["at"] = clock.to_ms(new_at) if isinstance(new_at, datetime) else new_at
    for field in ("name", "timezone", "payload", "retry_policy_id"):
        if field in changes:
            fields[field] = changes[field]
    if "endpoint_ids" in changes:
        fields["endpoint_ids"] = tuple(changes["endpoint_ids"])
    if "missed_policy" in changes:
        fields["missed_policy"] = MissedPolicy(changes["missed_policy"])
    if "jitter_sec" in changes:  # Fires already dispatched keep the offset they were given
        fields["jitter_sec"] = changes["jitter_sec"] or None
    if "overlap_policy" in changes:
        fields["overlap_policy"] = _overlap(changes["overlap_policy"])
    for field in ("start_at", "end_at"):
        if field in changes:
            value = changes[field]
            fields[field] = clock.to_ms(value) if isinstance(value, datetime) else None
    return fields


def pause(app_id: str, schedule_id: str, now: datetime, reason: str | None = None) -> Schedule:
    """Stop firing: no fire whose time comes after now is delivered while it stays paused (the
    worker reads the schedule right before each request), pending retries are cancelled (resume
    will not bring them back), and fire times it owed from before now are recorded MISSED. Fires
    dispatched ahead stay: a resume before their time delivers them. `reason` is kept on the
    schedule until it is resumed; pausing a paused schedule with a new reason replaces it."""
    return _stop(app_id, schedule_id, now, "schedule paused", pause_reason=reason, deleting=False)


def _stop(
    app_id: str,
    schedule_id: str,
    now: datetime,
    reason: str,
    *,
    pause_reason: str | None = None,
    deleting: bool = True,
) -> Schedule:
    """PAUSED first (no scan dispatches it any more), then cancel its open Fires (a pause spares
    those still to come); an already paused schedule is cancelled again, so a retried pause or
    delete finishes what a crashed one began."""
    now_ms = clock.to_ms(now)
    for _ in range(5):
        schedule = get(app_id, schedule_id)
        paused = schedule.status == ScheduleStatus.PAUSED
        if not paused and not deleting:
            caught_up = due_walk.record_owed(schedule, now)
            if caught_up is None:
                continue  # another writer moved it: read it again
            schedule = caught_up
        if not paused or (pause_reason is not None and pause_reason != schedule.pause_reason):
            version = schedule.version
            schedule = replace(
                schedule.paused_now(now_ms),
                pause_reason=pause_reason
                if not paused or pause_reason is not None
                else schedule.pause_reason,
                status=ScheduleStatus.PAUSED,
                version=version + 1,
                updated_at=clock.to_ms(now),
            )
            if not data.save_if_version(schedule, version):
                continue
        settle.cancel_open(
            schedule_id,
            now_ms,
            reason,
            last_fire_ms=_latest(schedule),
            keep=None if deleting else (lambda fire: fire.fire_at > now_ms and not fire.manual),
        )
        return schedule
    raise Conflict("the schedule is changing concurrently; try again", "id")


def resume(app_id: str, schedule_id: str, now: datetime) -> Schedule:
    """PAUSED → ACTIVE resets the failure counter and continues from the next fire time after now.
    A schedule that is not paused (ACTIVE, or ENDED: its last fires dispatched, or past its end_at)
    is left as it is, its failure count included."""
    for _ in range(5):
        schedule = get(app_id, schedule_id)
        if schedule.status != ScheduleStatus.PAUSED:
            return schedule
        version = schedule.version
        schedule = replace(
            schedule.resumed_now(clock.to_ms(now)),
            status=ScheduleStatus.ACTIVE,
            pause_reason=None,
            consecutive_failures=0,
            version=version + 1,
            updated_at=clock.to_ms(now),
        )
        if schedule.cron is None and schedule.at is not None and schedule.at < clock.to_ms(now):
            schedule = replace(
                schedule, next_fire_at=None
            )  # a one-time schedule whose time passed while paused
        else:
            schedule = _timed(schedule, now)
        if data.save_if_version(schedule, version):
            return kick(schedule, now)
    raise Conflict("the schedule is changing concurrently; try again", "id")


def trigger(app_id: str, schedule_id: str, now: datetime) -> Fire:
    """Fire once now, outside the cron times: the schedule's next fire time stays where it is, and
    the Fire counts toward auto-pause like any other. A paused or ended schedule does not fire."""
    schedule = get(app_id, schedule_id)
    _check_can_fire(schedule)
    fire = dispatch.trigger_fire(schedule, clock.to_ms(now))
    if fire is None:  # paused or deleted between the two reads
        _check_can_fire(get(app_id, schedule_id))
        raise Conflict("the schedule is changing concurrently; try again", "id")
    return fire


def _check_can_fire(schedule: Schedule) -> None:
    if schedule.status != ScheduleStatus.ACTIVE:
        raise Conflict(f"schedule {schedule.schedule_id} is {schedule.status}: resume it first", "id")
    if schedule.finished:
        raise Conflict(f"schedule {schedule.schedule_id} has ended", "id")


def delete(app_id: str, schedule_id: str, now: datetime) -> None:
    """Pause and cancel first, then delete: a crash in between leaves a paused schedule whose
    delete can be retried, never a deleted one whose dispatched fires still deliver."""
    schedule = _stop(app_id, schedule_id, now, "schedule deleted")
    data.delete(schedule)


def _latest(schedule: Schedule) -> int | None:
    """The schedule's latest dispatched fire time: Fires written a moment ago lie around it."""
    return schedule.last_fire_at


KICK_AHEAD_MS = 5_000  # a create (or resume, or timing edit) dispatches the fires of the next 5 s,
KICK_FIRES = 3  # and at least this many of its window, before it answers


def finish_create(schedule: Schedule, now: datetime) -> Schedule:
    """A schedule a create stored before its invocation died, found again by the client's retry
    with the same Idempotency-Key: do what that create left undone before answering. Fire times
    that passed since follow the missed-fire policy, as a scan tick would take them, and the next
    fires are dispatched as a create dispatches them, so every fire after the answer is delivered."""
    if (
        schedule.is_active
        and schedule.next_fire_at is not None
        and schedule.next_fire_at < clock.to_ms(now - due_walk.GRACE)
    ):
        schedule = due_walk.process(schedule, now, clock.to_ms(now), due_walk.ScheduleScanReport())
    return kick(schedule, now)


def kick(schedule: Schedule, now: datetime) -> Schedule:
    """Dispatch the next few seconds (at least the next few fires) before answering, and hand the
    rest of the look-ahead window to the fan-out function: a create of an every-second schedule
    answers after five fires, not seventy, and the others are dispatched in time order before the
    next scan tick could see them. Returns the schedule as its dispatch left it."""
    if schedule.status != ScheduleStatus.ACTIVE or schedule.next_fire_at is None:
        return schedule
    now_ms = clock.to_ms(now)
    horizon = now_ms + get_settings().lookahead_ms
    done = dispatch.dispatch_due(schedule, now, min(horizon, now_ms + KICK_AHEAD_MS))
    schedule = done.schedule
    if done.handled < KICK_FIRES:
        schedule = dispatch.dispatch_due(schedule, now, horizon, limit=KICK_FIRES - done.handled).schedule
    if schedule.is_active and schedule.next_fire_at is not None and schedule.next_fire_at <= horizon:
        send_schedule_dispatch(schedule.schedule_id, schedule.app_id, horizon)
    return schedule
