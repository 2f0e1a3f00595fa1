"""Missed-fire compensation ("catch-up"): a pure planner.

No clock, no I/O: the caller passes ``now`` and applies the plan with its own conditional writes.

Definitions
-----------
* **Pending fire times** of a cron schedule at ``now``: the stored ``next_fire_time`` itself (it
  is pending by definition, even if it is not on the schedule's grid, e.g. after an edit) plus
  every fire time of the schedule strictly between ``next_fire_time`` and ``now``. A fire time
  equal to ``now`` is NOT missed: it is still due and is dispatched normally.
* A cron schedule is **lagging** when at least two fire times are pending, i.e.
  ``prev_fire(spec, now) > next_fire_time``: a later fire time has passed too. With a single
  pending fire time the normal scan dispatches it (late); :func:`plan_catch_up` returns ``None``.
* A one-time schedule (``spec=None``, ``at`` set) has a plan whenever ``at < now``.
* ``now`` is the cut-off. A scan that wants a few seconds of lateness to be dispatched normally
  rather than recorded as MISSED passes ``now - grace``.

Policies
--------
* ``RUN_ONCE``: ``dispatch`` = the newest pending fire time; ``missed`` = the ``cap`` newest of
  the OTHER pending fire times (oldest first, newest last); ``left_out`` = how many more were
  missed but not listed.
* ``SKIP``: ``dispatch`` = None; ``missed`` = the ``cap`` newest of ALL pending fire times;
  ``left_out`` = the rest.
* ``next_fire`` = the first fire time at or after ``now`` (so a fire at exactly ``now`` is not
  lost). It is the value to compare-and-set into the schedule (``next_fire_time: old -> new``)
  when the caller dispatches ``dispatch`` itself in the same step. A caller that prefers to
  leave the dispatch to the scan (store ``dispatch`` as ``next_fire_time`` and let the normal scan dispatch and
  advance it) stores ``dispatch`` instead; advancing from it gives the same ``next_fire``, because
  no fire time lies between ``dispatch`` and ``now``. For one-time schedules ``next_fire`` is None.
* ``len(missed) + left_out (+ 1 if dispatch)`` is the exact number of pending fire times.

Cost
----
Bounded by ``cap``, not by the outage: the newest ``cap + 1`` fire times are collected walking
BACKWARDS from ``now``; the older ones are counted without being enumerated
(:func:`edgecron.domain.cron.count_fires_between`, which works per offset segment and per day with
time-of-day arithmetic). Measured on one core (``python -m edgecron.domain.catchup``): about
0.2-0.5 ms per plan for every-second, every-minute and daily schedules, whether the outage is one
minute, one day or 30 days.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from edgecron.domain.cron import (
    CronSpec,
    count_fires_between,
    latest_fires_between,
    next_fire,
)
from edgecron.domain.vocabulary import MissedPolicy, RunStatus

__all__ = [
    "MISSED_CAP",
    "POLICIES",
    "CatchUpPlan",
    "LateFirePlan",
    "MissedPolicy",
    "late_run_wake",
    "plan_catch_up",
    "plan_late_fires",
    "policy_of",
    "split_started",
]

POLICIES: Final[tuple[str, ...]] = tuple(MissedPolicy)
#: At most this many MISSED rows are recorded per schedule per catch-up (the newest).
MISSED_CAP: Final = 100

_US: Final = timedelta(microseconds=1)


@dataclass(frozen=True)
class CatchUpPlan:
    """What a catch-up does to one schedule. All times are UTC."""

    dispatch: datetime | None
    """The one fire time to run (RUN_ONCE), or None (SKIP)."""
    missed: list[datetime]
    """Fire times to record as MISSED, oldest first / newest last, at most ``cap``."""
    left_out: int
    """Missed fire times not listed because of the cap."""
    next_fire: datetime | None
    """The schedule's next_fire_time after the catch-up (first fire time >= now); None for
    one-time schedules."""

    @property
    def missed_total(self) -> int:
        """Every missed fire time, listed or not (excludes ``dispatch``)."""
        return len(self.missed) + self.left_out

    @property
    def moves_to(self) -> datetime | None:
        """The schedule's next fire time once the plan is applied: the one fire to run (RUN_ONCE,
        dispatched right after by the normal path) or the first fire time at or after now."""
        return self.dispatch if self.dispatch is not None else self.next_fire

    def finishes(self, one_time: bool) -> bool:
        """Whether applying the plan finishes the schedule: a one-time schedule whose time is skipped."""
        return one_time and self.dispatch is None


def policy_of(stored: str | None) -> MissedPolicy:
    """The missed-fire policy of a stored schedule: SKIP only when it says so, RUN_ONCE otherwise
    (the default, also for a value written by no current release)."""
    return MissedPolicy.SKIP if stored == MissedPolicy.SKIP else MissedPolicy.RUN_ONCE


def _aware(value: datetime, name: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime")
    return value.astimezone(UTC)


def plan_catch_up(
    spec: CronSpec | None,
    at: datetime | None,
    next_fire_time: datetime,
    now: datetime,
    policy: MissedPolicy,
    cap: int = MISSED_CAP,
) -> CatchUpPlan | None:
    """Plan the catch-up of one schedule, or return None when it is not behind.

    Cron schedules: pass ``spec`` and ``at=None``; one-time schedules: ``spec=None`` and ``at``
    (``next_fire_time`` is then ignored). See the module docstring for the exact semantics.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}")
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise ValueError("cap must be an integer >= 0")
    now = _aware(now, "now")

    if spec is None:
        if at is None:
            raise ValueError("a one-time schedule needs at (or pass a cron spec)")
        at = _aware(at, "at")
        if at >= now:
            return None
        if policy == "RUN_ONCE":
            return CatchUpPlan(dispatch=at, missed=[], left_out=0, next_fire=None)
        listed = [at] if cap else []
        return CatchUpPlan(dispatch=None, missed=listed, left_out=1 - len(listed), next_fire=None)
    if at is not None:
        raise ValueError("pass either a cron spec or at, not both")

    pending_from = _aware(next_fire_time, "next_fire_time")
    if pending_from >= now:
        return None
    keep = cap + 1  # RUN_ONCE needs the dispatch plus cap missed; SKIP needs cap
    newest = latest_fires_between(spec, pending_from, now, keep)
    if not newest:
        return None  # only next_fire_time is pending: the normal scan handles it
    if len(newest) < keep:
        pending = [pending_from, *newest]
        older = 0
    else:
        pending = newest
        older = 1 + count_fires_between(spec, pending_from, newest[0])  # +1: next_fire_time
    total = older + len(pending)
    upcoming = next_fire(spec, now - _US)  # first fire time >= now

    if policy == "RUN_ONCE":
        dispatch: datetime | None = pending[-1]
        candidates = pending[:-1]
        missed_total = total - 1
    else:
        dispatch = None
        candidates = pending
        missed_total = total
    missed = candidates[-cap:] if cap else []
    return CatchUpPlan(
        dispatch=dispatch,
        missed=missed,
        left_out=missed_total - len(missed),
        next_fire=upcoming,
    )


@dataclass(frozen=True)
class LateFirePlan:
    """What the scan does with a schedule's dispatched Fires whose runs' messages were lost before any
    run started. Fire times in epoch milliseconds."""

    run_late: list[int]
    """Fires whose runs are sent again and delivered late (RUN_ONCE: the most recent one)."""
    missed: list[int]
    """Fires whose runs are cancelled and that are recorded MISSED, oldest first."""


def plan_late_fires(
    spec: CronSpec | None,
    unstarted_ms: list[int],
    cutoff: datetime,
    policy: MissedPolicy,
    *,
    later_fire_ran: bool,
) -> LateFirePlan:
    """Apply the missed-fire policy to dispatched Fires none of whose runs started (their messages
    were lost), as the catch-up does to fire times never dispatched: RUN_ONCE delivers the most
    recent of them late if it is still the schedule's latest fire time before ``cutoff`` and no later
    Fire has run (``later_fire_ran``); everything else is MISSED. A Fire with a started run is not
    planned here: it happened, so its lost runs are simply delivered late."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}")
    ordered = sorted(set(unstarted_ms))
    if not ordered:
        return LateFirePlan(run_late=[], missed=[])
    newest = ordered[-1]
    if policy == "RUN_ONCE" and not later_fire_ran:
        following = None
        if spec is not None:
            following = next_fire(spec, datetime.fromtimestamp(newest / 1000, UTC))
        if following is None or following > _aware(cutoff, "cutoff"):
            return LateFirePlan(run_late=[newest], missed=ordered[:-1])
    return LateFirePlan(run_late=[], missed=ordered)


def split_started(runs_at: Mapping[int, Iterable[tuple[str, int]]]) -> tuple[set[int], list[int]]:
    """(fire times with a started run, the others oldest first) for the (status, attempts) of each
    Fire's runs. A run started once it was attempted or taken, whatever its status now, cancelled
    runs aside; a Fire none of whose runs started is what plan_late_fires decides about."""
    started = {
        t
        for t, runs in runs_at.items()
        if any(
            status != RunStatus.CANCELLED and not (status == RunStatus.PENDING and attempts == 0)
            for status, attempts in runs
        )
    }
    return started, sorted(t for t in runs_at if t not in started)


def late_run_wake(
    sent_ms: int, now_ms: int, waiting: int | None, retention_ms: int | None, redispatch_ms: int
) -> int | None:
    """When to look again at a schedule run no worker took after its message was sent at `sent_ms`,
    given the queues' backlog (`waiting` messages kept `retention_ms`; None: unknown): None when the
    message is lost (no backlog, or older than the queue keeps messages), so the missed-fire policy
    decides; otherwise a wake time that grows with the wait, never past the message's expiry."""
    if waiting is not None and retention_ms is not None and (waiting == 0 or now_ms - sent_ms > retention_ms):
        return None
    wait = max(redispatch_ms, now_ms - sent_ms)  # a long backlog is looked at less and less often
    if retention_ms is not None:
        wait = min(wait, max(redispatch_ms, sent_ms + retention_ms - now_ms))
    return now_ms + wait


def _benchmark() -> None:  # pragma: no cover - a manual tool
    import time

    from edgecron.domain.cron import parse_cron

    now = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    cases = [
        ("every second", "* * * * * *", "America/New_York"),
        ("every minute", "* * * * *", "America/New_York"),
        ("daily 09:00", "0 9 * * *", "America/New_York"),
        ("weekdays 09:00", "0 9 * * 1-5", "Europe/Berlin"),
    ]
    outages = [
        ("1 min", timedelta(minutes=1)),
        ("1 day", timedelta(days=1)),
        ("30 days", timedelta(days=30)),
        ("365 days", timedelta(days=365)),
    ]
    print(f"{'schedule':16} {'outage':9} {'policy':9} {'ms/plan':>8} {'missed':>7} {'left_out':>10}")
    for label, expr, zone in cases:
        spec = parse_cron(expr, zone)
        for outage_label, outage in outages:
            start = next_fire(spec, now - outage - timedelta(seconds=1))
            assert start is not None
            policies = tuple(MissedPolicy)
            for policy in policies:
                runs = 20
                t0 = time.perf_counter()
                for _ in range(runs):
                    plan = plan_catch_up(spec, None, start, now, policy)
                elapsed = (time.perf_counter() - t0) / runs * 1e3
                missed = "-" if plan is None else str(len(plan.missed))
                left = "-" if plan is None else str(plan.left_out)
                print(f"{label:16} {outage_label:9} {policy:9} {elapsed:8.3f} {missed:>7} {left:>10}")


if __name__ == "__main__":  # pragma: no cover
    _benchmark()
