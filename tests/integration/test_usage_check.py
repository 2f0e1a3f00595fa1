"""An App without a quota has its direct runs sent at creation counted by the scan's check of recent
runs, which reads each of them once anyway: the count rides on the write that moves the check's mark
(one write per App and page of the check, none by the API or the worker), and usage reads add what
the mark holds, a few minutes behind. A month's end moves what the mark holds to that month's
counter; so does a quota, whose check reads the counter alone. A check that dies before moving its
mark has counted nothing (the next tick counts once); a check made while the queues are rebuilt
counts nothing (the next tick does)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from edgecron import clock
from edgecron.data import run_checks
from edgecron.data.models import RunsCheckedModel
from edgecron.services import scan
from edgecron_testing.harness import call_api, invoke
from edgecron_testing.inprocess import UpdateItemCalls, usage_writes
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import ADMIN_KEY, Pump, new_app

LAG_SEC = 230  # when a run sent at creation is checked (REDISPATCH_AFTER_SEC - LOOKAHEAD_SEC)


class ScanDied(BaseException):
    """Stands for a scan Lambda killed mid-tick."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _endpoint(key: str, url: str) -> str:
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def _create_runs(key: str, endpoint_id: str, n: int) -> None:
    for _ in range(n):
        resp = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id})
        assert resp.status == 201, resp.body


def _direct(key: str, month: str | None = None) -> int:
    resp = call_api("GET", "/v1/usage", key=key, query={"month": month} if month else None)
    assert resp.status == 200, resp.body
    return int(resp.body["direct"])


def _delivered_and_checked(key: str, endpoint_id: str, n: int, pump: Pump, fixed: clock.FixedClock) -> None:
    """n direct runs created and delivered now, then checked by the scan once they are old enough."""
    _create_runs(key, endpoint_id, n)
    assert pump.deliveries() == n
    fixed.advance(LAG_SEC)
    invoke("scan", {"detail": {}})


def mark_writes(app_id: str) -> UpdateItemCalls:
    """The writes of one App's check mark."""
    return UpdateItemCalls(RunsCheckedModel, app_id)


def test_runs_of_an_app_without_a_quota_are_counted_by_the_check_with_one_add(
    receiver: Receiver, pump: Pump
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    app_id, key = new_app("usage-check")
    endpoint_id = _endpoint(key, receiver.url("/counted-later"))
    with usage_writes(app_id) as writes:
        _create_runs(key, endpoint_id, 5)
        assert pump.deliveries() == 5
    assert writes.updates == 0  # neither the API nor the worker wrote the counter
    assert _direct(key) == 0
    fixed.advance(LAG_SEC)
    with usage_writes(app_id) as writes, mark_writes(app_id) as marks:
        invoke("scan", {"detail": {}})
    assert (writes.updates, marks.updates) == (0, 1)  # the count rides on the mark's move
    assert _direct(key) == 5
    invoke("scan", {"detail": {}})  # checked once: counted once
    assert _direct(key) == 5


def test_runs_of_an_app_with_a_quota_are_counted_at_their_creation_and_not_by_the_check(
    receiver: Receiver, pump: Pump
) -> None:
    app_id, key = new_app("usage-quota-prompt")
    assert (
        call_api("PUT", f"/v1/apps/{app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": 100}).status == 200
    )
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    _create_runs(key, _endpoint(key, receiver.url("/counted-now")), 3)
    assert pump.deliveries() == 3
    assert _direct(key) == 3
    fixed.advance(LAG_SEC)
    invoke("scan", {"detail": {}})
    assert _direct(key) == 3  # the check does not count them again


def test_a_check_that_dies_before_moving_its_mark_has_counted_nothing_and_the_next_tick_counts_once(
    receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    _, key = new_app("usage-check-died")
    _create_runs(key, _endpoint(key, receiver.url("/died")), 2)
    assert pump.deliveries() == 2
    fixed.advance(LAG_SEC)

    def dies(*_: object) -> None:
        raise ScanDied

    with monkeypatch.context() as patch:
        patch.setattr(run_checks, "mark_checked", dies)
        with pytest.raises(ScanDied):
            invoke("scan", {"detail": {}})
    assert _direct(key) == 0
    invoke("scan", {"detail": {}})
    assert _direct(key) == 2


def test_a_rebuild_counts_nothing_and_the_next_tick_counts_once(receiver: Receiver, pump: Pump) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    _, key = new_app("usage-check-rebuild")
    _create_runs(key, _endpoint(key, receiver.url("/rebuild")), 2)
    assert pump.deliveries() == 2
    fixed.advance(LAG_SEC)
    scan.run_scan(fixed.now(), rebuild=True)
    assert _direct(key) == 0
    invoke("scan", {"detail": {}})
    assert _direct(key) == 2


def test_a_months_end_moves_what_the_mark_holds_to_that_months_counter(
    receiver: Receiver, pump: Pump
) -> None:
    november = datetime(2026, 11, 30, 23, 50, tzinfo=UTC)
    fixed = clock.FixedClock(november)
    clock.set_clock(fixed)
    _, key = new_app("usage-month-end")
    endpoint_id = _endpoint(key, receiver.url("/month-end"))
    _delivered_and_checked(key, endpoint_id, 3, pump, fixed)
    assert _direct(key, "2026-11") == 3  # held on the mark, read with the counter
    fixed.set(datetime(2026, 12, 1, 0, 5, tzinfo=UTC))
    _delivered_and_checked(key, endpoint_id, 2, pump, fixed)  # moves November's to its counter
    assert (_direct(key, "2026-11"), _direct(key, "2026-12")) == (3, 2)
    invoke("scan", {"detail": {}})
    assert (_direct(key, "2026-11"), _direct(key, "2026-12")) == (3, 2)


def test_setting_a_quota_moves_the_runs_the_check_counted_to_the_counter_it_reads(
    receiver: Receiver, pump: Pump
) -> None:
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    app_id, key = new_app("usage-quota-later")
    endpoint_id = _endpoint(key, receiver.url("/quota-later"))
    _delivered_and_checked(key, endpoint_id, 4, pump, fixed)
    assert _direct(key) == 4
    resp = call_api("PUT", f"/v1/apps/{app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": 5})
    assert resp.status == 200, resp.body
    assert _direct(key) == 4  # moved, not counted twice
    _create_runs(key, endpoint_id, 1)  # the fifth: within the quota, counted by its worker
    assert pump.deliveries() == 1
    refused = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint_id})
    assert refused.status == 429, refused.body
    assert _direct(key) == 5
