"""A reference model of what a user observes of one schedule (docs/time-rules.md, What a schedule
promises), kept pure and small so it can be read against the rules and checked against the system.

The model knows the schedule's timeline of user actions (create, pause, resume, a timing edit), the
scan's outages and how the receiver answers each request, and answers, for any instant, which
requests the receiver must have had (each fire time with its attempt numbers), what each Fire's
status reads, and what `status`, `pause_reason`, `consecutive_failures`, `next_fire_time`,
`last_fire_time` and `preview` read. Timing is an every-N-seconds grid (N divides 60) inside an
optional [start_at, end_at] window; the cron engine's own rules (zones, DST) are pinned by the
golden corpus of the cron unit tests and by `daily_fire` below.

The rules it encodes (docs/time-rules.md, What a schedule promises):
- a fire time F runs iff the schedule is ACTIVE at F (the last action before F, a user's or an
  auto-pause, left it ACTIVE) with a timing that fires at F, inside the window; its first request
  is made at F, or, when no scan dispatched it in time (an outage), at the first scan tick after:
  one such fire time runs late; two or more follow the missed-fire policy (RUN_ONCE: the newest
  runs late, the others are MISSED; SKIP: all are MISSED); a pause records those it owes MISSED;
- a request that fails is retried after the retry policy's delay (fixed, `retry_delay_sec`) up to
  `attempts` requests in all, unless a pause (a user's or an auto-pause) came after the fire time:
  a pause cancels the pending retries of the schedule and a resume does not bring them back (the
  Fire reads CANCELLED);
- a Fire is COMPLETED at its first successful request, FAILED when its last attempt failed (its
  run dead-lettered), RUNNING in between;
- each settled Fire counts while the schedule is ACTIVE: a FAILED one adds one to
  `consecutive_failures`, a COMPLETED one sets it to 0; at PAUSE_AFTER failures in a row the
  schedule pauses itself (`pause_reason` "3 fires in a row failed: …") and keeps that count until
  a resume sets it to 0 (a resume of an ACTIVE schedule changes nothing); a Fire that settles
  while the schedule is paused, or after its end_at, changes nothing;
- a schedule with no fire time left before its end_at, and none owed (not dispatched by an
  outage's end), is ENDED;
- `next_fire_time` is the first fire time after now of the current timing inside the window while
  ACTIVE, else none; `preview` lists the first n of them; `last_fire_time` is the newest fire time
  up to now whose Fire ran (RUNNING, COMPLETED or FAILED).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

PAUSE_AFTER = 3  # failed fires in a row that pause a schedule
LOOKAHEAD_MS = 70_000  # how far ahead the scan, a create, a resume and a timing edit dispatch
GRACE_MS = 2_000  # a fire found this late is dispatched late, not recorded as missed
MINUTE_MS = 60_000  # the scan ticks on every whole minute

COMPLETED, FAILED, RUNNING, CANCELLED, MISSED = "COMPLETED", "FAILED", "RUNNING", "CANCELLED", "MISSED"


@dataclass(frozen=True)
class Action:
    at_ms: int
    kind: str  # "create", "pause", "resume", "edit"
    every_sec: int


@dataclass
class Observed:
    """What the model says a user sees at one instant."""

    requests: list[tuple[int, int]]  # (fire time, attempt number), in the order they were made
    fires: dict[int, str]  # fire time -> status of every Fire that ran or was recorded MISSED
    status: str
    auto_paused: bool
    consecutive_failures: int
    last_fire: int | None
    upcoming: list[int]  # the first fire times after now while ACTIVE (up to PREVIEW_MAX)


PREVIEW_MAX = 5


@dataclass
class ScheduleModel:
    created_ms: int
    every_sec: int
    attempts: int = 1
    retry_delay_sec: int = 1
    # how many of a fire time's requests fail before one succeeds (0: the first one succeeds)
    failures_of: Callable[[int], int] = field(default=lambda _fire_ms: 0)
    start_ms: int | None = None
    end_ms: int | None = None
    missed_policy: str = "RUN_ONCE"
    actions: list[Action] = field(default_factory=list)
    # scan outages: (from, to) in ms; the tick at a whole minute M does not run if from < M <= to
    outages: list[tuple[int, int | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.actions.append(Action(self.created_ms, "create", self.every_sec))

    @property
    def current(self) -> Action:
        return self.actions[-1]

    def pause(self, at_ms: int) -> None:
        self.actions.append(Action(at_ms, "pause", self.current.every_sec))

    def resume(self, at_ms: int) -> None:
        self.actions.append(Action(at_ms, "resume", self.current.every_sec))

    def edit(self, at_ms: int, every_sec: int) -> None:
        self.actions.append(Action(at_ms, "edit", every_sec))

    def scan_down(self, at_ms: int) -> None:
        self.outages.append((at_ms, None))

    def scan_up(self, at_ms: int) -> None:
        start, _ = self.outages.pop()
        self.outages.append((start, at_ms))

    def _ticks(self, t: int) -> bool:
        return t % MINUTE_MS == 0 and not any(a < t and (b is None or t <= b) for a, b in self.outages)

    def _in_window(self, fire_ms: int) -> bool:
        return (self.start_ms is None or fire_ms >= self.start_ms) and (
            self.end_ms is None or fire_ms <= self.end_ms
        )

    def _grid(self, every: int, after_ms: int, before_ms: int) -> list[int]:
        """The fire times of an every-`every`-seconds timing in (after, before), inside the window."""
        step = every * 1000
        first = after_ms - after_ms % step + step
        return [f for f in range(first, before_ms, step) if self._in_window(f)]

    def _left(self, every: int, now_ms: int, n: int) -> list[int]:
        """The first n fire times after now inside the window."""
        step = every * 1000
        after = now_ms if self.start_ms is None else max(now_ms, self.start_ms - 1)
        first = after - after % step + step
        times = [first + i * step for i in range(n)]
        return [f for f in times if self.end_ms is None or f <= self.end_ms]

    def observe(self, now_ms: int) -> Observed:
        """Play the timeline up to `now_ms`: user actions (never on a whole second), scan ticks, fire
        times and retries (on whole seconds; a fire time and another fire's retry never share a
        second)."""
        requests: list[tuple[int, int]] = []
        fires: dict[int, str] = {}
        retries: dict[int, tuple[int, int]] = {}  # fire time -> (time of its next request, attempt)
        active, auto_paused, count = True, False, 0
        every = self.every_sec
        dispatched_to = self.created_ms + LOOKAHEAD_MS  # every fire time up to here was dispatched
        user = iter(self.actions[1:])
        pending_action = next(user, None)
        t = self.created_ms - self.created_ms % 1000 + 1000  # the first whole second after create

        def stop() -> None:
            nonlocal active
            active = False
            for fire_ms in retries:
                fires[fire_ms] = CANCELLED
            retries.clear()

        def counts(at_ms: int) -> bool:
            """A settled Fire counts while the schedule is not paused, up to its end_at."""
            return active and (self.end_ms is None or at_ms <= self.end_ms)

        while True:
            # user actions before this second
            while pending_action is not None and pending_action.at_ms < t:
                at = pending_action.at_ms
                if at > now_ms:
                    pending_action = None
                    break
                if pending_action.kind == "pause":
                    if active:  # what it owed from before now is recorded MISSED
                        for f in self._grid(every, dispatched_to, at - GRACE_MS):
                            fires[f] = MISSED
                        dispatched_to = max(dispatched_to, at)
                    stop()
                elif pending_action.kind == "resume":
                    if not active:  # a resume of an active schedule changes nothing
                        active, auto_paused, count = True, False, 0
                        dispatched_to = max(dispatched_to, at + LOOKAHEAD_MS)
                else:
                    every = pending_action.every_sec
                    dispatched_to = at + LOOKAHEAD_MS
                pending_action = next(user, None)
            if t > now_ms:
                break
            due = [(fire_ms, n) for fire_ms, (at, n) in retries.items() if at == t]
            late: list[tuple[int, int]] = []
            if self._ticks(t) and active:
                owed = self._grid(every, dispatched_to, t - GRACE_MS)
                if len(owed) == 1:  # not lagging: dispatched late
                    late.append((owed[0], 1))
                elif owed:
                    run = owed[-1] if self.missed_policy == "RUN_ONCE" else None
                    for f in owed:
                        if f != run:
                            fires[f] = MISSED
                    if run is not None:
                        late.append((run, 1))
                dispatched_to = max(dispatched_to, t + LOOKAHEAD_MS)
            if active and (t // 1000) % every == 0 and t <= dispatched_to and self._in_window(t):
                due.append((t, 1))
            due += late  # sent by the tick, after the fire time's own message
            for fire_ms, n in due:
                retries.pop(fire_ms, None)
                requests.append((fire_ms, n))
                if n > self.failures_of(fire_ms):
                    fires[fire_ms] = COMPLETED
                    if counts(t):
                        count = 0
                elif n < self.attempts:
                    fires[fire_ms] = RUNNING
                    retries[fire_ms] = (t + self.retry_delay_sec * 1000, n + 1)
                else:
                    fires[fire_ms] = FAILED
                    if counts(t):
                        count += 1
                        if count >= PAUSE_AFTER:
                            auto_paused = True
                            stop()
            t += 1000
        ran = [f for f, status in fires.items() if status not in (CANCELLED, MISSED)]
        left = self._left(every, now_ms, PREVIEW_MAX)
        # fire times up to end_at that no scan dispatched yet (an outage): a tick still owes them
        owed = self.end_ms is not None and bool(self._grid(every, dispatched_to, self.end_ms + 1))
        status = "PAUSED" if not active else ("ACTIVE" if left or owed else "ENDED")
        return Observed(
            requests,
            fires,
            status,
            auto_paused,
            count,
            max(ran) if ran else None,
            left if status == "ACTIVE" else [],
        )

    def delivered_by(self, now_ms: int) -> list[int]:
        """Every fire time up to `now_ms` whose first request must have been made, oldest first."""
        return sorted({fire_ms for fire_ms, n in self.observe(now_ms).requests if n == 1})

    def upcoming(self, now_ms: int, n: int) -> list[int]:
        """The next n fire times after `now_ms`, as `next_fire_time` and `preview` read them."""
        return self.observe(now_ms).upcoming[: max(n, 0)]

    def last_fire(self, now_ms: int) -> int | None:
        return self.observe(now_ms).last_fire


def daily_fire(day: date, at: time, zone: str) -> datetime:
    """The instant a daily fixed-time schedule (`M H * * *`) fires on a local day, by the DST rule
    (docs/time-rules.md): a wall time that exists once fires then; one in a spring gap fires at the
    first instant after the gap; one repeated in the autumn fires at its first occurrence."""
    tz = ZoneInfo(zone)
    wall = datetime.combine(day, at, tzinfo=tz)  # fold=0: the first occurrence when repeated
    if wall.astimezone(ZoneInfo("UTC")).astimezone(tz).replace(tzinfo=None) == wall.replace(tzinfo=None):
        return wall
    # in a spring gap: fold=0 read it with the offset before the gap, an instant after the gap;
    # walk back to the first instant of the new offset
    instant = wall.astimezone(ZoneInfo("UTC"))
    offset = instant.astimezone(tz).utcoffset()
    while (instant - timedelta(minutes=1)).astimezone(tz).utcoffset() == offset:
        instant -= timedelta(minutes=1)
    return instant.astimezone(tz)
