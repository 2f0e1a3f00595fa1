"""A schedule fire is one billable trigger, counted with the first write that creates its deliveries
(services/usage.py): the put of its first Endpoint's run, by that put's transaction for an App with
a quota and by the scan's check of recent runs for one without, or the record of a broadcast fire's
first fan-out page. Each is one conditional write, done once or not at all, so the count is exact
whatever fails: each test below kills a function or loses an answer once and counts what is billed."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock
from edgecron.data import fires as fire_data
from edgecron.data import usage as usage_data
from edgecron.data.models import FireModel, RunsCheckedModel
from edgecron.domain.vocabulary import FireStatus
from edgecron_testing import faults
from edgecron_testing.harness import call_api, invoke, load_event, schedules_firing_once, usage_once_checked
from edgecron_testing.inprocess import UpdateItemCalls, usage_writes
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import ADMIN_KEY, Pump, app_runs, new_app


class ScanDied(BaseException):
    """Stands for a scan Lambda killed mid-tick: nothing after this point runs."""


def _fires(schedule_ids: list[str]) -> list[FireModel]:
    return [fire for sid in schedule_ids for fire in FireModel.query(sid)]


def _billed(key: str) -> int:
    return int(call_api("GET", "/v1/usage", key=key).body["schedule"])


def _setup(
    receiver: Receiver, name: str, n: int, quota: int | None = None
) -> tuple[str, str, clock.FixedClock, list[str]]:
    app_id, key = new_app(name)
    if quota is not None:
        resp = call_api("PUT", f"/v1/apps/{app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": quota})
        assert resp.status == 200, resp.body
    endpoint = call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url(f"/{name}")})
    assert endpoint.status == 201, endpoint.body
    fire_at, ids = schedules_firing_once(key, str(endpoint.body["id"]), n)
    fixed = clock.FixedClock(fire_at)
    clock.set_clock(fixed)
    return app_id, key, fixed, ids


def test_ten_fires_of_an_app_without_a_quota_are_billed_by_the_check_with_one_write(
    receiver: Receiver,
) -> None:
    app_id, key, fixed, ids = _setup(receiver, "bill-ten", 10)
    with usage_writes(app_id) as dispatch_writes:
        invoke("scan", load_event("scan.json"))
    assert len(_fires(ids)) == 10
    assert dispatch_writes.updates == 0  # the fires' runs are marked for the check: nothing added yet
    assert _billed(key) == 0
    with usage_writes(app_id) as counter_writes, UpdateItemCalls(RunsCheckedModel, app_id) as mark_writes:
        assert usage_once_checked(fixed, key)["schedule"] == 10
    assert (counter_writes.updates, mark_writes.updates) == (0, 1)  # with the one move of the check's mark


def test_fires_within_the_quota_all_run_and_each_is_billed_with_its_run(receiver: Receiver) -> None:
    _, key, _, ids = _setup(receiver, "bill-quota", 10, quota=10)
    invoke("scan", load_event("scan.json"))
    fires = _fires(ids)
    assert len(fires) == 10
    assert all(fire.status != FireStatus.FAILED for fire in fires), [(f.status, f.error) for f in fires]
    assert _billed(key) == 10  # at once: a quota reads the counter


def test_a_fire_over_the_quota_in_the_same_tick_fails_unbilled(receiver: Receiver) -> None:
    _, key, _, ids = _setup(receiver, "bill-over", 4, quota=3)
    invoke("scan", load_event("scan.json"))
    statuses = [fire.status for fire in _fires(ids)]
    assert statuses.count(FireStatus.FAILED) == 1, statuses
    assert _billed(key) == 3


@pytest.mark.parametrize("quota", [None, 100], ids=["no_quota", "quota"])
def test_a_scan_killed_mid_tick_bills_every_fire_once(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch, quota: int | None
) -> None:
    """The scan dies after writing three of six Fires; the next tick finishes the tick (the same
    Fires, their runs) and every fire is billed exactly once."""
    _, key, fixed, ids = _setup(receiver, f"bill-died-{quota}", 6, quota=quota)
    create = fire_data.create
    written = 0

    def dies_after_three(*args: Any, **kwargs: Any) -> tuple[FireModel, bool]:
        nonlocal written
        if written == 3:
            raise ScanDied
        written += 1
        return create(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(fire_data, "create", dies_after_three)
        with pytest.raises(ScanDied):
            invoke("scan", load_event("scan.json"))
    assert len(_fires(ids)) == 3
    invoke("scan", load_event("scan.json"))
    assert len(_fires(ids)) == 6
    assert usage_once_checked(fixed, key)["schedule"] == 6


@pytest.mark.parametrize(
    ("kind", "quota"),
    [(faults.AFTER, 100), (faults.KILL_AFTER, 100), (faults.KILL_AFTER, None)],
    ids=["answer_lost_quota", "killed_after_quota", "killed_after_no_quota"],
)
def test_a_scan_that_dies_at_a_fires_first_run_bills_it_once(
    receiver: Receiver, kind: str, quota: int | None
) -> None:
    """The put of a fire's first run takes effect and the scan loses its answer or dies there; the
    next tick puts the run again (it exists) and the fire is still one trigger."""
    app_id, key, fixed, ids = _setup(receiver, f"bill-run-{kind}-{quota}", 2, quota=quota)
    operation = "TransactWriteItems" if quota else "PutItem"
    with faults.Faults() as f:
        f.on("dynamodb", operation, kind=kind, function="scan", table="RunsTable")
        with contextlib.suppress(faults.InvocationKilled):
            invoke("scan", load_event("scan.json"))
    assert sum(f.by_kind().values()) == 1
    invoke("scan", load_event("scan.json"))
    assert {run.source_id for run in app_runs(app_id)} == set(ids)
    assert usage_once_checked(fixed, key)["schedule"] == 2


def test_a_broadcast_fire_is_billed_once_by_its_first_page_whose_record_was_repeated(
    receiver: Receiver, pump: Pump
) -> None:
    """The fan-out dies right after recording the first page of a broadcast fire; SQS gives the
    page again, which finds it recorded, and the fire is one trigger."""
    app_id, key = new_app("bill-broadcast")
    for i in range(3):
        assert call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url(f"/b{i}")}).status == 201
    fire = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    resp = call_api(
        "POST", "/v1/schedules", key=key, body={"cron": f"{fire.second} {fire.minute} {fire.hour} * * *"}
    )
    assert resp.status == 201, resp.body
    with faults.Faults() as f:
        f.on("dynamodb", "TransactWriteItems", kind=faults.KILL_AFTER, function="fanout")
        pump.once("FanoutQueue", "fanout")
    assert f.count(faults.KILL_AFTER) == 1
    fixed = clock.FixedClock(datetime.now(UTC) + timedelta(seconds=61))  # its visibility timeout
    clock.set_clock(fixed)
    faults.return_in_flight()
    pump.deliveries()
    assert len(app_runs(app_id)) == 3
    assert _billed(key) == 1


def test_a_fire_an_earlier_release_wrote_and_billed_is_not_billed_again_by_its_runs(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier release billed a fire just before writing its Fire. A Fire it wrote whose runs the
    upgraded scan puts (its dispatch died, or it waits for its overlap policy) stays one trigger."""
    app_id, key, fixed, [schedule_id] = _setup(receiver, "bill-upgrade", 1)
    create = fire_data.create

    def earlier_release(*args: Any, **kwargs: Any) -> tuple[FireModel, bool]:
        fire, _ = create(*args, **kwargs)
        FireModel(schedule_id=fire.schedule_id, fire_at=fire.fire_at).update(
            actions=[FireModel.billed_with_runs.remove()]
        )
        usage_data.add(app_id, usage_data.month_of(fire.fire_at), "schedule")
        raise ScanDied

    with monkeypatch.context() as patch:
        patch.setattr(fire_data, "create", earlier_release)
        with pytest.raises(ScanDied):
            invoke("scan", load_event("scan.json"))
    invoke("scan", load_event("scan.json"))
    assert [run.source_id for run in app_runs(app_id)] == [schedule_id]
    assert usage_once_checked(fixed, key)["schedule"] == 1


@pytest.mark.parametrize("quota", [None, 100], ids=["no_quota", "quota"])
def test_a_fire_whose_runs_a_pause_wrote_cancelled_is_billed_once(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch, quota: int | None
) -> None:
    """The scan wrote the Fire and died before its runs; the pause that follows writes them
    cancelled (so no late dispatch can send them). The fire was dispatched: it is one trigger."""
    app_id, key, fixed, [schedule_id] = _setup(receiver, f"bill-paused-{quota}", 1, quota=quota)
    create = fire_data.create

    def dies_after_the_fire(*args: Any, **kwargs: Any) -> tuple[FireModel, bool]:
        create(*args, **kwargs)
        raise ScanDied

    with monkeypatch.context() as patch:
        patch.setattr(fire_data, "create", dies_after_the_fire)
        with pytest.raises(ScanDied):
            invoke("scan", load_event("scan.json"))
    assert call_api("POST", f"/v1/schedules/{schedule_id}/pause", key=key).status == 200
    [run] = app_runs(app_id)
    assert run.status == "cancelled"
    invoke("scan", load_event("scan.json"))
    assert usage_once_checked(fixed, key)["schedule"] == 1
