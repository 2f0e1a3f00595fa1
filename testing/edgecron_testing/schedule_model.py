"""A reference model of what a user observes of one schedule (docs/time-rules.md, What a schedule
promises), kept pure and small so it can be read against the rules and checked against the system.

The model knows the schedule's timeline of user actions (create, pause, resume, a timing edit) and
answers, for any instant, which fire times must have been delivered exactly once, which must never
be, and what `next_fire_time`, `last_fire_time` and `preview` read. Timing is an every-N-seconds
grid (N divides 60), which is all the conformance test needs; the cron engine's own rules (zones,
DST) are pinned by the golden corpus of the cron unit tests.

The rules it encodes:
- a fire time F is delivered iff the last action before F left the schedule ACTIVE with a timing
  that fires at F (after a pause returns, nothing after it is delivered; after a resume returns,
  everything after it is; after an edit returns, fires after it follow the new timing);
- every delivered fire time is delivered exactly once, at or after F;
- `next_fire_time` is the first fire time after now of the current timing while ACTIVE, else none;
  `preview` lists the first n of them; `last_fire_time` is the newest delivered fire time up to now.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Action:
    at_ms: int
    active: bool
    every_sec: int


@dataclass
class ScheduleModel:
    created_ms: int
    every_sec: int
    actions: list[Action] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.actions.append(Action(self.created_ms, True, self.every_sec))

    @property
    def current(self) -> Action:
        return self.actions[-1]

    def pause(self, at_ms: int) -> None:
        self.actions.append(Action(at_ms, False, self.current.every_sec))

    def resume(self, at_ms: int) -> None:
        self.actions.append(Action(at_ms, True, self.current.every_sec))

    def edit(self, at_ms: int, every_sec: int) -> None:
        self.actions.append(Action(at_ms, self.current.active, every_sec))

    def _in_force(self, fire_ms: int) -> Action | None:
        """The last action strictly before `fire_ms`: it decides that fire time."""
        found = None
        for action in self.actions:
            if action.at_ms < fire_ms:
                found = action
        return found

    def delivers(self, fire_ms: int) -> bool:
        action = self._in_force(fire_ms)
        return (
            action is not None
            and action.active
            and fire_ms % 1000 == 0
            and (fire_ms // 1000) % action.every_sec == 0
        )

    def delivered_by(self, now_ms: int) -> list[int]:
        """Every fire time up to `now_ms` that must have been delivered, oldest first."""
        first = self.created_ms - self.created_ms % 1000 + 1000
        return [t for t in range(first, now_ms + 1, 1000) if self.delivers(t)]

    def upcoming(self, now_ms: int, n: int) -> list[int]:
        """The next n fire times after `now_ms`, as `next_fire_time` and `preview` read them."""
        action = self.current
        if not action.active or n <= 0:
            return []
        step = action.every_sec * 1000
        first = now_ms - now_ms % step + step
        return [first + i * step for i in range(n)]

    def last_fire(self, now_ms: int) -> int | None:
        done = self.delivered_by(now_ms)
        return done[-1] if done else None
