"""How a schedule fire is billed: once, with the write that creates its deliveries. A listed fire is
billed by the put of its first Endpoint's Task Run (whatever that run's status: one written cancelled
because a pause or delete stopped the Fire still bills the Fire its dispatch wrote); a broadcast fire
by the record of its first fan-out page (data/fires.py `record_page`). The put is conditional, so
the count is done once or not at all (services/usage.py)."""

from __future__ import annotations

from dataclasses import replace

from edgecron.config import get_settings
from edgecron.data import run_checks
from edgecron.data import runs as run_data
from edgecron.domain.fires import Fire
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import Source
from edgecron.services import quota, usage


def bills(fire: Fire, endpoint_id: str) -> bool:
    """Whether the run of `fire` at `endpoint_id` is the one that bills a listed fire: its first
    Endpoint's, for a Fire this release wrote (an earlier release billed the Fire itself)."""
    return (
        fire.billed_with_runs
        and not fire.paged
        and bool(fire.endpoint_ids)
        and fire.endpoint_ids[0] == endpoint_id
    )


def put_run(run: TaskRun, now_ms: int, *, billing: bool) -> bool:
    """Create a fire's run unless it exists (True if this call created it). The run that is `billing`
    its fire counts it with its put: marked for the scan's check of recent runs to count, for an App
    without a quota when the check is still to read the run; else by the put's transaction."""
    if not billing:
        return run_data.put_new(run)
    by_check = not quota.has_quota(run.app_id) and run_checks.checked_later(
        run.run_id, now_ms, get_settings()
    )
    if by_check:
        created = run_data.put_new(replace(run, counted_by_check=True))
    else:
        created = run_data.put_new_billed(run, usage.month_of(now_ms), Source.SCHEDULE)
    if created:
        usage.recorded()
    return created


def put_cancelled(fire: Fire, endpoint_id: str, run_id: str, now_ms: int, reason: str) -> bool:
    """Write a run of `fire` its dispatch never created as cancelled, unless it exists (a dispatch
    still under way then cannot create and send it). The Fire was written, so the fire was
    dispatched: its first run bills it, even written cancelled. True if this call wrote it."""
    run = run_data.new_cancelled(
        run_id=run_id,
        app_id=fire.app_id,
        endpoint_id=endpoint_id,
        schedule_id=fire.schedule_id,
        fire_at=fire.fire_at,
        now_ms=now_ms,
        reason=reason,
    )
    return put_run(run, now_ms, billing=bills(fire, endpoint_id))
