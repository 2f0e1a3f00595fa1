"""A daily schedule in a zone with daylight saving, day after day across its spring-forward and
fall-back dates, against the DST rule of the reference model (edgecron_testing.schedule_model's
`daily_fire`): a skipped local time fires at the end of the gap, a repeated one at its first
occurrence, and every other day at the local time. Also across a rollback and a roll-forward: the
scan deployed with `DUE_WALK_ADVANCES=false` (a rollback being prepared, or the release rolled back
to, which writes every advance) for some days, then with the default again, so the schedule's day
wheel slot was last written by the other mode when the offset changes. The virtual clock jumps from
one fire to the next, running the scan tick that dispatches each and the seconds around it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta

import pytest

from edgecron import clock
from edgecron.config import get_settings
from edgecron_testing.harness import call_api
from edgecron_testing.inprocess import due_walk_left_at, new_app
from edgecron_testing.receiver import Receiver
from edgecron_testing.schedule_model import daily_fire
from edgecron_testing.virtual_time import VirtualStack, sqs_on_clock

# (zone, the day its offset changes)
CHANGES = [
    ("America/New_York", date(2027, 3, 14)),  # 02:00 → 03:00: 02:30 does not exist
    ("America/New_York", date(2027, 11, 7)),  # 02:00 → 01:00: 01:30 happens twice
    ("Europe/Berlin", date(2027, 3, 28)),
    ("Europe/Berlin", date(2027, 10, 31)),
]
DAYS = range(-1, 2)  # the day before the change, its day and the day after


def iso(value: datetime | None) -> str | None:
    return None if value is None else clock.iso(value.astimezone(UTC))


@pytest.fixture
def walk_mode() -> Iterator[None]:
    saved = os.environ.get("DUE_WALK_ADVANCES")
    yield
    if saved is None:
        os.environ.pop("DUE_WALK_ADVANCES", None)
    else:
        os.environ["DUE_WALK_ADVANCES"] = saved
    get_settings.cache_clear()


def walk_advances(on: bool) -> None:
    """Deploy the scan with the due walk's advances on (the default) or off (every advance written)."""
    os.environ["DUE_WALK_ADVANCES"] = "true" if on else "false"
    get_settings.cache_clear()


class Daily:
    def __init__(self, stack: VirtualStack, receiver: Receiver, cron: str, zone: str) -> None:
        self.stack, self.receiver = stack, receiver
        _, self.key = new_app("daily")
        self.path = f"/daily/{zone}/{stack.now.timestamp():.0f}"
        endpoint = self.api("POST", "/v1/endpoints", {"url": receiver.url(self.path)}).body["id"]
        resp = self.api("POST", "/v1/schedules", {"cron": cron, "timezone": zone, "endpoint_ids": [endpoint]})
        assert resp.status == 201, resp.body
        self.id = resp.body["id"]
        self.created = resp.body

    def api(self, method: str, path: str, body: dict[str, object] | None = None, **kw: object) -> object:
        return call_api(method, path, key=self.key, body=body, **kw)  # type: ignore[arg-type]

    def get(self) -> dict[str, object]:
        resp = call_api("GET", f"/v1/schedules/{self.id}", key=self.key, query={"preview": "2"})
        assert resp.status == 200, resp.body
        return dict(resp.body)

    def delivered(self) -> list[str]:
        return sorted(
            r.headers["edgecron-fire-time"]
            for r in self.receiver.requests
            if r.path == self.path and r.headers.get("edgecron-schedule-id") == self.id
        )

    def fires(self) -> dict[str, str]:
        resp = call_api("GET", f"/v1/schedules/{self.id}/fires", key=self.key, query={"limit": "50"})
        return {f["fire_time"]: f["status"] for f in resp.body["data"]}

    def through(self, fire: datetime) -> None:
        """Jump to just before the scan tick that dispatches `fire` (the first whole minute at most
        70 s, the look-ahead, before it; nothing of this schedule is due in between), run that
        tick, jump to just before the fire when no other tick lies between, and run the stack (the
        scan every minute, the consumers every second) to five seconds after it."""
        fire = fire.astimezone(UTC)
        earliest = fire - timedelta(seconds=70)
        tick = earliest.replace(second=0, microsecond=0)
        if tick < earliest:
            tick += timedelta(minutes=1)
        if self.stack.now < tick - timedelta(seconds=1):
            self.stack.clock.set(tick - timedelta(seconds=1))
        self.stack.run_until(tick + timedelta(seconds=1))
        if fire - tick < timedelta(minutes=1) and self.stack.now < fire - timedelta(seconds=2):
            self.stack.clock.set(fire - timedelta(seconds=2))
        self.stack.run_until(fire + timedelta(seconds=5))


def expected(zone: str, change: date, wall: time) -> list[datetime]:
    return [daily_fire(change + timedelta(days=d), wall, zone) for d in DAYS]


def run_and_check(schedule: Daily, fires: list[datetime], rollback: range = range(0)) -> None:
    """Run through each fire; the walk's advances are off for the fires whose index is in
    `rollback` and on again after them. After each fire: delivered once at its time, the next
    fire time and preview read the model's next two."""
    for i, fire in enumerate(fires):
        if i in rollback:
            walk_advances(False)
        elif i - 1 in rollback:
            walk_advances(True)
        schedule.through(fire)
        assert schedule.delivered() == [iso(f) for f in fires[: i + 1]], (i, fire.isoformat())
        got = schedule.get()
        if i + 1 < len(fires):
            assert got["next_fire_time"] == iso(fires[i + 1]), (i, got)
            if i + 2 < len(fires):
                assert got["preview"] == [iso(fires[i + 1]), iso(fires[i + 2])], (i, got)
        assert got["last_fire_time"] == iso(fire), (i, got)
    assert set(schedule.fires().values()) == {"COMPLETED"}, schedule.fires()
    assert sorted(schedule.fires()) == [iso(f) for f in fires]


# the local time each change makes interesting: skipped in spring, repeated in the autumn
WALLS = {3: time(2, 30), 11: time(1, 30), 10: time(2, 30)}


@pytest.mark.parametrize(("zone", "change"), CHANGES, ids=[f"{z}-{d}" for z, d in CHANGES])
def test_a_daily_schedule_fires_once_a_day_by_the_dst_rule(
    zone: str, change: date, receiver: Receiver
) -> None:
    wall = WALLS[change.month]
    first = expected(zone, change, wall)
    fixed = clock.FixedClock(first[0] - timedelta(hours=3))
    with sqs_on_clock(fixed):
        due_walk_left_at(clock.to_ms(fixed.now()) - 60_000)
        stack = VirtualStack(fixed)
        stack.run_until(fixed.now() + timedelta(seconds=1, milliseconds=500))
        daily = Daily(stack, receiver, f"{wall.minute} {wall.hour} * * *", zone)
        assert daily.created["next_fire_time"] == iso(first[0])
        run_and_check(daily, first)


# the fires (by index in DAYS) during which the walk's advances are off: before the change only,
# over the change, and the change day alone
ROLLBACKS = {"before": range(0, 1), "over": range(0, 2), "on-the-day": range(1, 2)}


ROLLED = [(*CHANGES[0], r) for r in ROLLBACKS] + [(*CHANGES[1], "before")]


@pytest.mark.parametrize(("zone", "change", "rollback"), ROLLED, ids=[f"{z}-{d}-{r}" for z, d, r in ROLLED])
def test_after_a_rollback_and_a_roll_forward_a_daily_schedule_keeps_its_local_time(
    zone: str, change: date, rollback: str, receiver: Receiver, walk_mode: None
) -> None:
    first = expected(zone, change, time(2, 30))
    fixed = clock.FixedClock(first[0] - timedelta(hours=3))
    with sqs_on_clock(fixed):
        due_walk_left_at(clock.to_ms(fixed.now()) - 60_000)
        stack = VirtualStack(fixed)
        stack.run_until(fixed.now() + timedelta(seconds=1, milliseconds=500))
        daily = Daily(stack, receiver, "30 2 * * *", zone)
        run_and_check(daily, first, ROLLBACKS[rollback])
