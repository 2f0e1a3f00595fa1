"""A scan bills the schedule fires it dispatches per App in a few usage ADDs: it reserves triggers
ahead (each reservation twice the one before), spends one per Fire it creates and takes back the
rest at the end of the tick. A fire is billed before its Fire is written, so a scan that dies
bills too much, never too little, and the quota check does not count what is only reserved."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from edgecron import clock
from edgecron.data import fires as fire_data
from edgecron.data import usage as usage_data
from edgecron.data.models import FireModel
from edgecron.domain.vocabulary import FireStatus
from edgecron_testing.harness import call_api, invoke, load_event, schedules_firing_once
from edgecron_testing.inprocess import usage_writes
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import ADMIN_KEY, new_app


class ScanDied(BaseException):
    """Stands for a scan Lambda killed mid-tick: nothing after this point runs."""


def _fires(schedule_ids: list[str]) -> list[FireModel]:
    return [fire for sid in schedule_ids for fire in FireModel.query(sid)]


def _billed(key: str) -> int:
    return int(call_api("GET", "/v1/usage", key=key).body["schedule"])


def _setup(
    receiver: Receiver, name: str, n: int, quota: int | None = None
) -> tuple[str, str, datetime, list[str]]:
    app_id, key = new_app(name)
    if quota is not None:
        resp = call_api("PUT", f"/v1/apps/{app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": quota})
        assert resp.status == 200, resp.body
    endpoint = call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url(f"/{name}")})
    assert endpoint.status == 201, endpoint.body
    fire_at, ids = schedules_firing_once(key, str(endpoint.body["id"]), n)
    return app_id, key, fire_at, ids


def test_a_scan_bills_ten_fires_of_one_app_with_five_adds(receiver: Receiver) -> None:
    app_id, key, fire_at, ids = _setup(receiver, "bill-ten", 10)
    clock.set_clock(clock.FixedClock(fire_at))
    with usage_writes(app_id) as writes:
        invoke("scan", load_event("scan.json"))
    fires = _fires(ids)
    assert len(fires) == 10
    assert _billed(key) == 10
    assert writes.updates == 5  # reserved 1 + 2 + 4 + 8, the 5 left over taken back in one ADD


def test_fires_within_the_quota_all_run_though_the_scan_reserved_more(receiver: Receiver) -> None:
    """Ten fires against a quota of ten: the reservation took the counter to 15, the check sees 9
    before the last fire."""
    _, key, fire_at, ids = _setup(receiver, "bill-quota", 10, quota=10)
    clock.set_clock(clock.FixedClock(fire_at))
    invoke("scan", load_event("scan.json"))
    fires = _fires(ids)
    assert len(fires) == 10
    assert all(fire.status != FireStatus.FAILED for fire in fires), [(f.status, f.error) for f in fires]
    assert _billed(key) == 10


def test_a_fire_over_the_quota_in_the_same_tick_fails_unbilled(receiver: Receiver) -> None:
    _, key, fire_at, ids = _setup(receiver, "bill-over", 4, quota=3)
    clock.set_clock(clock.FixedClock(fire_at))
    invoke("scan", load_event("scan.json"))
    statuses = [fire.status for fire in _fires(ids)]
    assert statuses.count(FireStatus.FAILED) == 1, statuses
    assert _billed(key) == 3


def test_a_scan_that_dies_mid_tick_bills_every_fire_it_wrote(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reserved triggers it did not spend stay billed (too much, never too little); the next
    scan finishes the tick and bills only the Fires it creates."""
    _, key, fire_at, ids = _setup(receiver, "bill-died", 6)
    clock.set_clock(clock.FixedClock(fire_at))
    create, add = fire_data.create, usage_data.add
    written = 0

    def dies_after_three(*args: Any, **kwargs: Any) -> tuple[FireModel, bool]:
        nonlocal written
        if written == 3:
            raise ScanDied
        written += 1
        return create(*args, **kwargs)

    def no_take_back(app_id: str, month: str, kind: str, amount: int = 1) -> None:
        if amount < 0:
            raise ScanDied  # killed: the end of the tick never runs
        add(app_id, month, kind, amount)

    with monkeypatch.context() as patch:
        patch.setattr(fire_data, "create", dies_after_three)
        patch.setattr(usage_data, "add", no_take_back)
        with pytest.raises(ScanDied):
            invoke("scan", load_event("scan.json"))
    assert len(_fires(ids)) == 3
    died_billed = _billed(key)
    assert died_billed == 7  # three written, the fourth reserved with three more: 1 + 2 + 4
    invoke("scan", load_event("scan.json"))
    assert len(_fires(ids)) == 6
    assert _billed(key) == died_billed + 3  # the next scan bills the three Fires it writes
