"""Schedule reads for the API: the App's Schedules, and a Schedule's recent Fires with their runs."""

from __future__ import annotations

from typing import Any

from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as data
from edgecron.data.paging import Page
from edgecron.domain.fires import Fire
from edgecron.domain.schedules import Schedule
from edgecron.domain.task_runs import TaskRun


def find(app_id: str, schedule_id: str, *, consistent: bool = False) -> Schedule | None:
    return data.get(app_id, schedule_id, consistent=consistent)


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[Schedule]:
    return data.list_page(app_id, limit, cursor)


def fires_page(
    schedule_id: str, limit: int, cursor: dict[str, Any] | None, now_ms: int
) -> tuple[Page[Fire], dict[str, TaskRun]]:
    """Fires newest first and their Task Runs by id (one batch read)."""
    page = fire_data.recent(schedule_id, limit, now_ms, cursor)
    runs = {r.run_id: r for fire in page.items for r in run_data.get_many(fire.app_id, list(fire.run_ids))}
    return Page([_as_runs_left_it(fire, runs) for fire in page.items], page.last_key), runs


def fire_with_runs(fire: Fire) -> tuple[Fire, dict[str, TaskRun]]:
    """One Fire (a trigger's) and its Task Runs by id."""
    runs = {r.run_id: r for r in run_data.get_many(fire.app_id, list(fire.run_ids))}
    return _as_runs_left_it(fire, runs), runs


def _as_runs_left_it(fire: Fire, runs: dict[str, TaskRun]) -> Fire:
    """A Fire its only run settles reads as that run left it (it is not written when the run completes)."""
    return fire.as_run_left_it(runs.get(fire.run_ids[0])) if len(fire.run_ids) == 1 else fire
