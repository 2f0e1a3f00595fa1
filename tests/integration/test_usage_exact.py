"""Usage is exact under faults: one billable trigger per direct run sent at its creation, whatever
AWS call fails and however a function dies (data-model.md, Usage). Each test injects one fault."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from edgecron import clock
from edgecron.data import run_checks
from edgecron.data.models import RUNS_CHECKED_MONTH
from edgecron_testing import faults
from edgecron_testing.harness import call_api, invoke
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import ADMIN_KEY, Pump, new_app
from tests.integration.test_usage_check import _create_runs, _direct, _endpoint

LAG_SEC = 230  # when a run sent at creation is checked (REDISPATCH_AFTER_SEC - LOOKAHEAD_SEC)


def test_a_worker_killed_after_its_request_bills_the_run_of_an_app_with_a_quota_once(
    receiver: Receiver, pump: Pump
) -> None:
    """The worker dies at the write of the result, after its HTTP call: the message comes back, a
    second worker delivers again, and the run is still one trigger."""
    app_id, key = new_app("usage-exact-worker")
    assert (
        call_api("PUT", f"/v1/apps/{app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": 100}).status == 200
    )
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    endpoint_id = _endpoint(key, receiver.url("/killed"))
    _create_runs(key, endpoint_id, 1)
    with faults.Faults() as f:
        f.on("dynamodb", "UpdateItem", kind=faults.KILL, function="worker", table="RunsTable", nth=2)
        assert pump.once("DeliveryQueue", "worker") == 1
    assert f.count(faults.KILL) == 1
    fixed.advance(61)  # the claim of the dead worker expires
    faults.return_in_flight()
    assert pump.deliveries() == 1
    assert len(receiver.received("/killed")) == 2
    assert _direct(key) == 1


def test_a_duplicated_check_tick_bills_the_runs_it_reads_twice_once(
    receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two scan ticks read the App's check mark before either moves it (a duplicated tick): both
    read the same runs, one counts them."""
    fixed = clock.FixedClock(datetime.now(UTC))
    clock.set_clock(fixed)
    app_id, key = new_app("usage-exact-twin-tick")
    _create_runs(key, _endpoint(key, receiver.url("/twin")), 3)
    assert pump.deliveries() == 3
    fixed.advance(LAG_SEC)
    stale = run_checks.marks([app_id])  # what both ticks read before either wrote
    invoke("scan", {"detail": {}})
    assert _direct(key) == 3
    with monkeypatch.context() as patch:
        patch.setattr(run_checks, "marks", lambda app_ids: {k: v for k, v in stale.items() if k in app_ids})
        invoke("scan", {"detail": {}})
    assert _direct(key) == 3


def test_a_check_killed_as_it_moves_a_months_count_bills_each_month_exactly(
    receiver: Receiver, pump: Pump
) -> None:
    """At a month's first check the mark's held count goes to last month's counter; the tick dies
    at the write of the mark, and the next tick does the move again."""
    fixed = clock.FixedClock(datetime(2026, 11, 30, 23, 50, tzinfo=UTC))
    clock.set_clock(fixed)
    app_id, key = new_app("usage-exact-month")
    endpoint_id = _endpoint(key, receiver.url("/month"))
    _create_runs(key, endpoint_id, 3)
    assert pump.deliveries() == 3
    fixed.advance(LAG_SEC)
    invoke("scan", {"detail": {}})
    fixed.set(datetime(2026, 12, 1, 0, 5, tzinfo=UTC))
    _create_runs(key, endpoint_id, 2)
    assert pump.deliveries() == 2
    fixed.advance(LAG_SEC)
    with faults.Faults() as f:
        f.on(
            "dynamodb",
            kind=faults.KILL,
            function="scan",
            table="UsageTable",
            when=lambda call: (
                call.operation in ("UpdateItem", "TransactWriteItems")
                and app_id in str(call.params)
                and RUNS_CHECKED_MONTH in str(call.params)
            ),
        )
        with pytest.raises(faults.InvocationKilled):
            invoke("scan", {"detail": {}})
    assert f.count(faults.KILL) == 1
    invoke("scan", {"detail": {}})
    assert (_direct(key, "2026-11"), _direct(key, "2026-12")) == (3, 2)
