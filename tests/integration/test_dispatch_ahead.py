"""A schedule's fires are dispatched ahead of their fire time, cheaply: the create's first seconds,
then the rest of its look-ahead window from the fan-out function, interleaved with other
schedules' windows so that none waits for another's whole window."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest

from edgecron import clock
from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data.models import FireModel
from edgecron.services.fanout import WINDOW_STEP_MS
from edgecron_testing.harness import call_api
from tests.integration.conftest import Pump

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def fixed() -> Iterator[clock.FixedClock]:
    c = clock.FixedClock(T0)
    clock.set_clock(c)
    yield c


def _endpoint(key: str) -> str:
    resp = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/x"})
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def _schedule(key: str, **body: Any) -> dict[str, Any]:
    resp = call_api("POST", "/v1/schedules", key=key, body=body)
    assert resp.status == 201, resp.body
    return dict(resp.body)


def test_dispatching_fires_creates_no_new_dynamodb_client(
    app_key: str, fixed: clock.FixedClock, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each Fire is created in a transaction; building a botocore client for each one (loading the
    DynamoDB service model from disk) cost more than the rest of the dispatch together."""
    ep = _endpoint(app_key)
    _schedule(app_key, cron="* * * * * *", endpoint_ids=[ep])  # warm: the first clients are made here
    created: list[str] = []
    original = botocore.session.Session.create_client

    def counting(self: botocore.session.Session, service_name: str, *args: Any, **kwargs: Any) -> Any:
        created.append(service_name)
        return original(self, service_name, *args, **kwargs)

    monkeypatch.setattr(botocore.session.Session, "create_client", counting)
    _schedule(app_key, cron="* * * * * *", endpoint_ids=[ep])
    assert pump.once("FanoutQueue", "fanout", batch=1) >= 1
    assert created == []


def _latest_fire_ms(schedule_id: str) -> int:
    return max(int(f.fire_at) for f in FireModel.query(schedule_id))


def test_windows_of_schedules_created_together_are_dispatched_in_fire_time_order(
    app_key: str, fixed: clock.FixedClock, pump: Pump
) -> None:
    """Each create hands the rest of its look-ahead window to the fan-out function. Handled one
    window at a time, the last of twenty schedules created together waited for nineteen whole
    windows (1,300 fires) before its sixth second was dispatched, and fired up to 40 s late."""
    ep = _endpoint(app_key)
    ids = [_schedule(app_key, cron="* * * * * *", endpoint_ids=[ep])["id"] for _ in range(3)]
    t0 = clock.to_ms(T0)
    hops = 0
    while pump.once("FanoutQueue", "fanout", batch=1):
        hops += 1
        latest = [_latest_fire_ms(i) for i in ids]
        assert max(latest) - min(latest) <= WINDOW_STEP_MS, (hops, [(t - t0) // 1000 for t in latest])
    assert hops > len(ids)  # each window took several steps, in turn
    for schedule_id in ids:
        fires = list(FireModel.query(schedule_id))
        assert [int(f.fire_at) for f in fires] == [t0 + 1000 * i for i in range(1, 71)]
        runs = run_data.get_many(fires[0].app_id, [rid for f in fires for rid in fire_data.run_ids_of(f)])
        assert len(runs) == 70 and all(int(r.created_at) < int(r.fire_at or 0) for r in runs)
