"""The scan works within the Lambda's remaining time and shares it fairly: a burst of every-second
schedules does not stall due runs and interrupted Fires for every tenant, and one bad item never
aborts a tick. Time is the Lambda context's remaining time, spent by a fixed amount per AWS call, so
the test is deterministic and never waits."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.client
import pytest

from edgecron import clock
from edgecron.config import get_settings
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.keys import run_partition
from edgecron.data.models import ScheduleModel, TaskRunModel
from edgecron.data.run_checks import check_lag_ms
from edgecron.domain.vocabulary import ScheduleStatus
from edgecron_testing.harness import FakeContext, call_api, load_function
from edgecron_testing.inprocess import INDEX_TIME, app_of_run
from tests.integration.conftest import drain_queues, new_app

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
TIMEOUT_MS = 60_000  # the scan function's timeout
MS_PER_CALL = 100  # what one AWS call costs of the budget here


class CountingContext(FakeContext):
    """A Lambda context whose remaining time runs down with every AWS call made."""

    calls = 0

    def get_remaining_time_in_millis(self) -> int:
        return TIMEOUT_MS - MS_PER_CALL * CountingContext.calls


@pytest.fixture
def lambda_time(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str, Any]]:
    """Counts AWS calls; returns the (remaining ms, operation, params) of each call made."""
    CountingContext.calls = 0
    seen: list[tuple[int, str, Any]] = []
    original = botocore.client.BaseClient._make_api_call

    def call(self: Any, operation: str, params: Any) -> Any:
        CountingContext.calls += 1
        seen.append((TIMEOUT_MS - MS_PER_CALL * CountingContext.calls, operation, params))
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", call)
    return seen


def sent_at(seen: list[tuple[int, str, Any]], run_id: str) -> list[int]:
    """The remaining time at each SendMessageBatch that carried `run_id`."""
    return [
        remaining
        for remaining, operation, params in seen
        if operation == "SendMessageBatch" and any(run_id in e["MessageBody"] for e in params["Entries"])
    ]


def every_second_schedules(
    app_id: str, key: str, endpoint_id: str, n: int, first_fire: datetime
) -> list[str]:
    """ACTIVE every-second schedules whose look-ahead nobody has dispatched yet (created paused and
    resumed in the table, as after an outage of the API's dispatch)."""
    ids = []
    for _ in range(n):
        body = {"cron": "* * * * * *", "endpoint_ids": [endpoint_id], "status": "PAUSED"}
        s = call_api("POST", "/v1/schedules", key=key, body=body).body
        paused = schedule_data.get_timed(app_id, s["id"], consistent=True)
        assert paused is not None
        active = replace(paused, status=ScheduleStatus.ACTIVE, next_fire_at=clock.to_ms(first_fire))
        assert schedule_data.save_if_version(active, paused.version)
        ids.append(s["id"])
    INDEX_TIME.settle()  # in the due index when the scan reads it
    return ids


def delayed_run(key: str, endpoint_id: str, delay_sec: int) -> str:
    resp = call_api(
        "POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id, "delay_sec": delay_sec}
    )
    assert resp.status in (201, 202), resp.body
    return str(resp.body["id"])


def scan(event: dict[str, Any] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = load_function("scan").lambda_handler(
        event or {"detail": {}}, CountingContext("scan")
    )
    return result


def test_a_burst_of_schedules_does_not_stall_due_runs(lambda_time: list[tuple[int, str, Any]]) -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("budget")
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
    run_id = delayed_run(key, ep, 100)  # beyond the look-ahead: the scan must enqueue it
    fixed.set(T0 + timedelta(seconds=40))
    every_second_schedules(app_id, key, ep, 3, T0 + timedelta(seconds=41))  # ~210 fires, ~1,500 AWS calls
    lambda_time.clear()
    CountingContext.calls = 0
    result = scan()
    assert lambda_time[-1][0] > 0, "the scan ran past its Lambda timeout"
    sends = sent_at(lambda_time, run_id)
    assert sends and sends[0] > 0, "the due run was not enqueued before the timeout"
    assert result["unfinished"] == ["schedules"]  # the rest of the burst waits for the next tick
    assert result["fires_dispatched"] > 0
    run = run_data.get(app_of_run(run_id), run_id, consistent=True)
    assert run is not None and run.status == "pending"


def test_one_bad_run_or_schedule_never_aborts_a_tick(lambda_time: list[tuple[int, str, Any]]) -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("isolation")
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
    bad_run, good_run = delayed_run(key, ep, 100), delayed_run(key, ep, 100)
    TaskRunModel(run_partition(app_id, bad_run), bad_run).update(
        actions=[TaskRunModel.deliver_at.remove()]
    )  # unreadable
    [bad_schedule] = every_second_schedules(app_id, key, ep, 1, T0 + timedelta(seconds=41))
    ScheduleModel(app_id=app_id, schedule_id=bad_schedule).update(actions=[ScheduleModel.cron.set("x")])
    fixed.set(T0 + timedelta(seconds=40))
    result = scan()
    assert sent_at(lambda_time, good_run), "the good run was not enqueued"
    assert result["unfinished"] == []
    assert result["item_failures"] == 2


def test_an_unreadable_run_sent_at_its_creation_never_stops_the_check_of_its_apps_runs(
    lambda_time: list[tuple[int, str, Any]],
) -> None:
    """The check of recent runs reads a run that no longer maps to a Task Run: one item failure, and
    the run created after it is still found and sent again once its message is lost."""
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("unreadable-check")
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"}).body["id"]
    bad_run = delayed_run(key, ep, 0)
    fixed.advance(0.001)
    good_run = delayed_run(key, ep, 0)
    TaskRunModel(run_partition(app_id, bad_run), bad_run).update(
        actions=[TaskRunModel.deliver_at.remove()]
    )  # unreadable
    drain_queues()  # both messages are lost
    sends_before = len(sent_at(lambda_time, good_run))
    fixed.advance(check_lag_ms(get_settings()) / 1000 + 1)
    result = scan()
    assert result["item_failures"] == 1, result
    assert len(sent_at(lambda_time, good_run)) == sends_before + 1, "the good run was not sent again"
    assert result["unfinished"] == []
