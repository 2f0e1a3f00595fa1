"""Catch-up with an injected clock: outages of 1 minute, 1 day and 30 days for every-second,
every-minute, daily (across a DST change) and one-time schedules, under both policies. The expected
fire times are computed here independently (arithmetic, or day by day with zoneinfo)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from edgecron import clock
from edgecron.data import schedules as schedule_data
from edgecron.data.models import FireModel
from edgecron.services import scan
from edgecron.services.fires import due_walk
from edgecron_testing.harness import call_api, invoke
from tests.integration.conftest import new_app

T0 = datetime(2026, 3, 27, 8, 0, 0, tzinfo=UTC)  # London moves to BST on 2026-03-29
LONDON = ZoneInfo("Europe/London")
GRACE = 2


def create(key: str, **body: Any) -> dict[str, Any]:
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
    resp = call_api("POST", "/v1/schedules", key=key, body={"endpoint_ids": [ep], **body})
    assert resp.status == 201, resp.body
    return dict(resp.body)


def catch_up(app_id: str, schedule_id: str, now: datetime) -> due_walk.ScheduleScanReport:
    """What the scan and the compensation do for one due schedule."""
    report = due_walk.ScheduleScanReport()
    schedule = schedule_data.get_timed(app_id, schedule_id)
    assert schedule is not None
    due_walk.process(schedule, now, clock.to_ms(now) + 70_000, report)
    return report


def fires(schedule_id: str) -> dict[int, str]:
    return {int(f.fire_at) // 1000: f.status for f in FireModel.query(schedule_id)}


def pending_times(kind: str, start: int, cutoff: int) -> tuple[int, list[int]]:
    """(count, newest 101) of the fire times t with start <= t < cutoff (epoch seconds)."""
    if kind in ("second", "minute"):
        step = 1 if kind == "second" else 60
        first = -(-start // step) * step
        last = (cutoff - 1) // step * step
        n = 0 if last < first else (last - first) // step + 1
        return n, [t for t in range(max(first, last - 100 * step), last + 1, step)]
    times = []
    day = datetime.fromtimestamp(start, UTC).astimezone(LONDON).date() - timedelta(days=1)
    while True:
        t = int(datetime(day.year, day.month, day.day, 9, 0, tzinfo=LONDON).timestamp())
        if t >= cutoff:
            break
        if t >= start:
            times.append(t)
        day += timedelta(days=1)
    return len(times), times[-101:]


CRONS = {"second": "* * * * * *", "minute": "* * * * *", "daily": "0 9 * * *"}
OUTAGES = {"1min": 60, "1day": 86_400, "30days": 30 * 86_400}


@pytest.mark.parametrize("policy", ["RUN_ONCE", "SKIP"])
@pytest.mark.parametrize("outage", list(OUTAGES))
@pytest.mark.parametrize("kind", list(CRONS))
def test_outage_catch_up(kind: str, outage: str, policy: str) -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("catchup")
    s = create(key, cron=CRONS[kind], timezone="Europe/London", missed_policy=policy)
    before = fires(s["id"])
    stored = schedule_data.get_timed(app_id, s["id"])
    assert stored is not None
    next_before = int(stored.next_fire_at) // 1000
    now = T0 + timedelta(seconds=70 + OUTAGES[outage])  # the scan was down after the creation's look-ahead
    fixed.set(now)
    report = catch_up(app_id, s["id"], now)
    now_s = int(now.timestamp())
    cutoff = now_s - GRACE
    total, newest = pending_times(kind, next_before, cutoff)
    after = fires(s["id"])
    new = {t: status for t, status in after.items() if t not in before}
    missed = sorted(t for t, status in new.items() if status == "MISSED")
    dispatched = sorted(t for t, status in new.items() if status != "MISSED")
    stored = schedule_data.get_timed(app_id, s["id"])
    assert stored is not None
    if total <= 1:  # not lagging: the one pending fire is dispatched late, nothing is missed
        assert missed == [] and report.catch_ups == 0
        assert stored.missed_left_out == 0
        assert all(t >= next_before for t in dispatched)
        return
    assert report.catch_ups == 1
    if policy == "RUN_ONCE":
        assert newest[-1] in dispatched  # the most recent missed fire time runs
        assert missed == newest[-101:-1][-100:]
        assert stored.missed_left_out == total - 1 - len(missed)
    else:
        assert all(t >= cutoff for t in dispatched)  # nothing from the outage runs
        assert missed == newest[-100:]
        assert stored.missed_left_out == total - len(missed)
    assert stored.next_fire_at is not None and stored.next_fire_at // 1000 > now_s
    # a second catch-up (the deploy compensation, or a concurrent scan) changes nothing
    again = catch_up(app_id, s["id"], now)
    assert again.catch_ups == 0 and fires(s["id"]) == after


def test_expected_counts_for_the_big_outage() -> None:
    """Pins the arithmetic above on one case by hand: every second, 30 days down, RUN_ONCE."""
    start = int(T0.timestamp()) + 71
    cutoff = int(T0.timestamp()) + 70 + 30 * 86_400 - GRACE
    total, newest = pending_times("second", start, cutoff)
    assert total == 30 * 86_400 - 3 and newest[-1] == cutoff - 1 and len(newest) == 101


@pytest.mark.parametrize("policy", ["RUN_ONCE", "SKIP"])
def test_missed_one_time_schedule(policy: str) -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("once")
    at = T0 + timedelta(hours=1)
    s = create(key, at=at.isoformat(), missed_policy=policy)
    fixed.set(at + timedelta(days=1))
    due_walk.dispatch_schedules(fixed.now())
    got = fires(s["id"])
    stored = schedule_data.get_timed(app_id, s["id"])
    assert stored is not None and stored.next_fire_at is None
    if policy == "RUN_ONCE":
        assert got == {int(at.timestamp()): "SCHEDULED"}
    else:
        assert got == {int(at.timestamp()): "MISSED"} and stored.finished is True


def test_catch_up_races_a_scan_without_double_dispatch(monkeypatch: pytest.MonkeyPatch) -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("race")
    s = create(key, cron="* * * * *")
    fixed.set(T0 + timedelta(hours=2))
    stale = schedule_data.get_timed(app_id, s["id"])  # what a slower concurrent scan read
    assert stale is not None
    due_walk.dispatch_schedules(fixed.now())
    after_first = fires(s["id"])
    report = due_walk.ScheduleScanReport()
    due_walk.process(stale, fixed.now(), clock.to_ms(fixed.now()) + 70_000, report)
    assert fires(s["id"]) == after_first and report.fires_dispatched == 0


def test_catch_up_does_not_rewind_a_schedule_the_user_just_edited() -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("edit")
    s = create(key, cron="* * * * *")
    fixed.set(T0 + timedelta(hours=2))
    stale = schedule_data.get_timed(app_id, s["id"])
    assert stale is not None
    call_api("PATCH", f"/v1/schedules/{s['id']}", key=key, body={"cron": "0 0 1 1 *"})
    report = due_walk.ScheduleScanReport()
    due_walk.process(stale, fixed.now(), clock.to_ms(fixed.now()) + 70_000, report)
    edited = schedule_data.get_timed(app_id, s["id"])
    assert edited is not None and edited.cron == "0 0 1 1 *"
    assert edited.next_fire_at == clock.to_ms(datetime(2027, 1, 1, tzinfo=UTC))


def test_lost_prefetched_fires_follow_the_missed_policy() -> None:
    """An outage that also lost the queued messages of fires dispatched ahead: RUN_ONCE delivers only
    the most recent fire; the rest become MISSED (the scan's reconcile of never-started runs)."""
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    _app_id, key = new_app("lost")
    s = create(key, cron="*/30 * * * * *")
    prefetched = fires(s["id"])
    assert len(prefetched) == 2  # T0+30 s and T0+60 s were enqueued ahead
    from tests.integration.conftest import drain_queues

    drain_queues()  # the outage loses them
    fixed.set(T0 + timedelta(minutes=2, seconds=8))
    invoke(
        "compensation",
        {
            "RequestType": "Create",
            "ResponseURL": "http://127.0.0.1:9/none",
            "StackId": "s",
            "RequestId": "r",
            "LogicalResourceId": "DeployCompensation",
        },
    )
    scan.run_scan(fixed.now(), rebuild=True)  # the restarted stack rebuilds its queues from DynamoDB
    got = fires(s["id"])
    t0 = int(T0.timestamp())
    assert got[t0 + 30] == "MISSED" and got[t0 + 60] == "MISSED"
    assert got[t0 + 90] == "MISSED" and got[t0 + 120] in {"SCHEDULED", "RUNNING"}


class DispatchDied(Exception):
    pass


@pytest.mark.parametrize("policy", ["RUN_ONCE", "SKIP"])
@pytest.mark.parametrize("outage_s", [600, 3 * 86_400])  # within the 100-row cap, and far past it
def test_a_fire_whose_dispatch_died_before_an_outage_is_missed_by_the_catch_up(
    policy: str, outage_s: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dispatch wrote the Fire and died before its runs; the scan then stayed down past later fire
    times. The catch-up moves the schedule past that fire time, so it records the Fire MISSED (its
    runs, never created, are written cancelled) instead of leaving it open with no runs."""
    from edgecron.data import fires as fire_data
    from edgecron.data import runs as run_data
    from edgecron.services.fires import dispatch

    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("died-then-outage")
    s = create(key, cron="0 9 * * *" if outage_s > 86_400 else "* * * * *", missed_policy=policy)
    stored = schedule_data.get_timed(app_id, s["id"], consistent=True)
    assert stored is not None and stored.next_fire_at is not None
    fire_at = int(stored.next_fire_at)
    fixed.set(datetime.fromtimestamp(fire_at / 1000, UTC) - timedelta(seconds=30))

    def die(*args: Any, **kwargs: Any) -> Any:
        raise DispatchDied("after the Fire was written")

    monkeypatch.setattr(dispatch.run_data, "put_new", die)
    with pytest.raises(DispatchDied):
        dispatch.dispatch_due(stored, fixed.now(), fire_at)
    monkeypatch.undo()
    assert fires(s["id"])[fire_at // 1000] == "SCHEDULED"
    assert run_data.get_many(app_id, fire_data.run_ids_of(fire_data.get(s["id"], fire_at))) == []  # type: ignore[arg-type]
    now = datetime.fromtimestamp(fire_at / 1000, UTC) + timedelta(seconds=outage_s)
    fixed.set(now)
    report = catch_up(app_id, s["id"], now)
    assert report.catch_ups == 1
    fire = fire_data.get(s["id"], fire_at)
    assert fire is not None and fire.status == "MISSED"
    runs = run_data.get_many(app_id, fire_data.run_ids_of(fire))
    assert [r.status for r in runs] == ["cancelled"]
