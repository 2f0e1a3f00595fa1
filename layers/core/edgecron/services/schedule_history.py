"""Schedule reads for the API: the App's Schedules, and a Schedule's recent Fires with their runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from edgecron import clock
from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as data
from edgecron.data.paging import Page
from edgecron.domain.fires import Fire
from edgecron.domain.schedules import Schedule, ScheduleView
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import ScheduleStatus


def view(schedule: Schedule, now: datetime, preview: int = 0) -> ScheduleView:
    """The schedule as a user is told it at `now`. A cron schedule is stored ENDED when its last fire
    inside end_at is dispatched, up to the look-ahead early: until that fire's time it still fires,
    so it reads ACTIVE with its fire times left."""
    now_ms = clock.to_ms(now)
    if schedule.status == ScheduleStatus.ENDED and schedule.cron is not None:
        firing = replace(schedule, status=ScheduleStatus.ACTIVE)
        if firing.upcoming(now_ms, 1):
            schedule = firing
    upcoming = schedule.upcoming(now_ms, max(1, preview))
    return ScheduleView(
        schedule,
        upcoming[0] if upcoming else None,
        fire_data.latest_fired(schedule.schedule_id, now_ms),
        upcoming[:preview] if preview else None,
    )


def find(app_id: str, schedule_id: str, *, consistent: bool = False) -> Schedule | None:
    return data.get(app_id, schedule_id, consistent=consistent)


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[Schedule]:
    return data.list_page(app_id, limit, cursor)


def fires_page(
    schedule_id: str, limit: int, cursor: dict[str, Any] | None, now_ms: int
) -> tuple[Page[Fire], dict[str, TaskRun]]:
    """Fires newest first and their Task Runs by id (one batch read per Fire; a broadcast Fire's
    first SHOWN_RUNS runs, in fan-out order)."""
    page = fire_data.recent(schedule_id, limit, now_ms, cursor)
    runs = {r.run_id: r for fire in page.items for r in _runs_of(fire)}
    return Page([_as_runs_left_it(fire, runs) for fire in page.items], page.last_key), runs


def fire_with_runs(fire: Fire) -> tuple[Fire, dict[str, TaskRun]]:
    """One Fire (a trigger's) and its Task Runs by id."""
    runs = {r.run_id: r for r in _runs_of(fire)}
    return _as_runs_left_it(fire, runs), runs


SHOWN_RUNS = 25  # the runs of a broadcast Fire a listing shows (the runs list has them all)


def _runs_of(fire: Fire) -> list[TaskRun]:
    if not fire.paged:
        return run_data.get_many(fire.app_id, list(fire.run_ids))
    first = next(fire_data.run_id_pages(fire), [])
    return run_data.get_many(fire.app_id, first[:SHOWN_RUNS])


def _as_runs_left_it(fire: Fire, runs: dict[str, TaskRun]) -> Fire:
    """A Fire its only run settles reads as that run left it (it is not written when the run completes)."""
    return fire.as_run_left_it(runs.get(fire.run_ids[0])) if len(fire.run_ids) == 1 else fire
