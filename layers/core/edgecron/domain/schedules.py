"""A Schedule: where (its Endpoints, or every Endpoint of its App) and when (a cron expression in
a time zone, or one time `at`) to deliver its payload, and how far its fires have got. Times are
epoch milliseconds. The data layer reads and writes it whole or by compare-and-set, and keeps the
index attributes that put it in the scan's due index to itself.

The cron rules (domain/cron.py: croniter and the time zone database) are imported when a schedule's
timing is first computed, not with this module: the functions that only read and settle schedules
(the worker, the DLQ consumers) mostly never compute one."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from edgecron import clock
from edgecron.domain.vocabulary import MissedPolicy, OverlapPolicy, ScheduleStatus

if TYPE_CHECKING:
    from edgecron.domain.cron import CronSpec

PAUSE_REASON_MAX = 500  # characters of a pause reason (a user's, or the failure that auto-paused it)
PAUSES_KEPT = 16  # the latest pauses a schedule remembers (Schedule.paused_at)


@dataclass(frozen=True)
class Schedule:
    app_id: str
    schedule_id: str
    created_at: int
    updated_at: int
    name: str | None = None
    cron: str | None = None  # one of cron and at
    at: int | None = None
    timezone: str = "UTC"
    endpoint_ids: tuple[str, ...] = ()  # empty: every Endpoint of the App at fire time
    payload: Any = None
    status: ScheduleStatus = ScheduleStatus.ACTIVE
    missed_policy: MissedPolicy = MissedPolicy.RUN_ONCE
    retry_policy_id: str | None = None
    consecutive_failures: int = 0
    pause_reason: str | None = None  # why it was paused (by a user or by failures)
    start_at: int | None = None  # no fire before this time
    end_at: int | None = None  # no fire after this time; past it a cron schedule is ENDED
    jitter_sec: int | None = None  # each fire is due at an offset in [0, jitter_sec)
    overlap_policy: OverlapPolicy | None = None  # None: ALLOW
    # the turn (SKIP, BUFFER_ONE): the Fire admitted last while open, and the one waiting for it
    turn_at: int | None = None
    next_turn_at: int | None = None
    next_fire_at: int | None = None  # None: nothing left to fire (one-time fired, window ended)
    finished: bool = False
    missed_left_out: int = 0  # MISSED Fires a catch-up counted but did not write
    last_fire_at: int | None = None  # the latest fire time dispatched
    # when its current timing took effect (a timing edit; None: unedited since it was created), so a
    # run dispatched ahead under an earlier timing is withheld at its time if this one has no such fire
    timing_since: int | None = None
    # when its current pause began (None while it is not paused), and its latest ended pauses as
    # [began, resumed) pairs, oldest first: a fire whose time lies inside one is never delivered,
    # however late its message is handled (paused_at)
    paused_since: int | None = None
    pauses: tuple[tuple[int, int], ...] = ()
    version: int = 1  # moved by every write: the compare-and-set of user edits
    # How the data layer stored this copy (its due index entry, and its next_fire_at as stored, which
    # lags the next fire on a day or hour wheel: see walked_past), which its compare-and-set writes
    # check. Opaque outside the data layer; None for a copy not read from storage.
    as_stored: object = field(default=None, compare=False, repr=False)

    @property
    def is_active(self) -> bool:
        return self.status == ScheduleStatus.ACTIVE

    @property
    def is_broadcast(self) -> bool:
        """Bound to every active Endpoint of the App at fire time (no listed endpoint_ids)."""
        return not self.endpoint_ids

    def fires_next_at(self, fire_at_ms: int) -> bool:
        """ACTIVE, and its stored next fire time is `fire_at_ms`: a dispatcher may fire it."""
        return self.is_active and self.next_fire_at == fire_at_ms

    def has_fire_at(self, fire_at_ms: int) -> bool:
        """Whether its timing fires at `fire_at_ms`, inside its [start_at, end_at] window."""
        spec = self.spec()
        if spec is None:
            return self.at == fire_at_ms
        if self.start_at is not None and fire_at_ms < self.start_at:
            return False
        from edgecron.domain import cron as cron_rules

        nxt = cron_rules.next_fire(spec, clock.from_ms(fire_at_ms - 1000))
        return nxt is not None and self.within_window(clock.to_ms(nxt)) == fire_at_ms

    def withholds(self, fire_at_ms: int, dispatched_at_ms: int) -> bool:
        """Whether a fire dispatched ahead at `dispatched_at_ms` under an earlier timing must not be
        delivered: a timing edit took effect after it was dispatched and before its time, and the
        timing now has no such fire. A fire whose time came by the edit belongs to the timing of its
        time and goes on; one dispatched after the edit was dispatched by the timing it has."""
        since = self.timing_since
        return (
            since is not None and dispatched_at_ms <= since < fire_at_ms and not self.has_fire_at(fire_at_ms)
        )

    def paused_at(self, fire_at_ms: int) -> bool:
        """Whether a fire at `fire_at_ms` is one of a pause: the schedule is paused now, or the fire
        time lies inside one of its remembered pauses. A fire dispatched ahead before a pause is
        decided at its time; the one whose worker died then comes back after the resume (or after
        the claim expired, due again later), and is decided by its fire time as it would have been
        then."""
        if self.status == ScheduleStatus.PAUSED:
            return True
        return any(began <= fire_at_ms < resumed for began, resumed in self.pauses)

    def paused_now(self, now_ms: int) -> Schedule:
        """This schedule as a pause at `now_ms` leaves it (its status is the caller's write)."""
        return self if self.paused_since is not None else replace(self, paused_since=now_ms)

    def resumed_now(self, now_ms: int) -> Schedule:
        """This schedule as a resume at `now_ms` leaves it: the pause that ends is remembered."""
        if self.paused_since is None:
            return self
        ended = (*self.pauses, (self.paused_since, now_ms))[-PAUSES_KEPT:]
        return replace(self, paused_since=None, pauses=ended)

    def spec(self) -> CronSpec | None:
        """Its cron expression in its time zone; None for a one-time schedule."""
        if not self.cron:
            return None
        from edgecron.domain import cron as cron_rules

        return cron_rules.parse_cron(self.cron, self.timezone)

    def within_window(self, fire_at_ms: int | None) -> int | None:
        """`fire_at_ms` if it lies inside the [start_at, end_at] window, else None (a time before
        start_at is never passed: timing starts the search there)."""
        if fire_at_ms is None or (self.end_at is not None and fire_at_ms > self.end_at):
            return None
        return fire_at_ms

    def next_after(self, after_ms: int) -> int | None:
        """The next fire strictly after `after_ms` inside the window (None for a one-time schedule)."""
        spec = self.spec()
        if spec is None:
            return None
        from edgecron.domain import cron as cron_rules

        nxt = cron_rules.next_fire(spec, clock.from_ms(after_ms))
        return self.within_window(clock.to_ms(nxt) if nxt else None)

    def upcoming(self, now_ms: int, n: int) -> list[int]:
        """The next `n` fire times after `now_ms` that will be delivered, as a user is told them
        (`next_fire_time`, `preview`): none while it is paused, ended or finished; a cron schedule's
        from its expression inside the [start_at, end_at] window, whatever has been dispatched
        ahead; a one-time schedule's `at` until that time has passed."""
        if n <= 0 or self.status != ScheduleStatus.ACTIVE or self.finished:
            return []
        if self.cron is None:
            return [self.at] if self.at is not None and self.at > now_ms else []
        after = now_ms if self.start_at is None else max(now_ms, self.start_at - 1)
        from edgecron.domain import cron as cron_rules

        try:
            spec = cron_rules.parse_cron(self.cron, self.timezone)
            found = cron_rules.next_fires(spec, clock.from_ms(after), min(n, cron_rules.MAX_PREVIEW))
        except (cron_rules.CronError, ValueError, OverflowError):
            return []
        times = [clock.to_ms(t) for t in found]
        return [t for t in times if self.within_window(t) is not None]

    def walked_past(self, walked_to_ms: int) -> Schedule:
        """The schedule once the scan's due walk has passed `walked_to_ms`. A schedule whose due
        entry stays on a wheel slot or on the every-tick key is not written when the scan dispatches
        a fire that leaves it there: the walk passes a fire time only once the fires found up to it
        were dispatched, so every fire time from the stored one up to `walked_to_ms` is done, and the
        next fire is the first after it. A later stored next fire time (a resume, an edit) stands."""
        stored = self.next_fire_at
        if not self.is_active or self.cron is None or stored is None or stored > walked_to_ms:
            return self
        from edgecron.domain import cron as cron_rules

        try:
            spec = cron_rules.parse_cron(self.cron, self.timezone)
        except cron_rules.CronError:
            return self  # stored in a form this release cannot read: its dispatch records the failure
        nxt = self.next_after(walked_to_ms)
        if nxt is None:
            return self  # its window ends: the scan's dispatch of the stored time records that
        passed = cron_rules.prev_fire(spec, clock.from_ms(walked_to_ms + 1))
        last = max(stored, self.last_fire_at or 0, clock.to_ms(passed) if passed is not None else 0)
        return replace(self, next_fire_at=nxt, last_fire_at=last)

    @property
    def fire_overlap(self) -> OverlapPolicy | None:
        """The overlap policy a cron fire is created under; None for ALLOW (and one-time schedules,
        whose only fire has nothing to overlap with): such a Fire starts at dispatch, as always."""
        if self.cron is None or self.overlap_policy in (None, OverlapPolicy.ALLOW):
            return None
        return self.overlap_policy


@dataclass(frozen=True)
class ScheduleView:
    """A Schedule as a user is told it: its next fire times from its timing and status (not how
    far fires were dispatched ahead), and its last fire time from its Fires."""

    schedule: Schedule
    next_fire_at: int | None
    last_fire_at: int | None
    preview: list[int] | None  # the next fire times, when asked for
