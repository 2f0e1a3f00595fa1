from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from edgecron import clock
from edgecron.data.models import FireModel
from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import ADMIN_KEY, Pump, new_app


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_fires_over_quota_fail_unbilled_and_auto_pause(receiver: Receiver, pump: Pump) -> None:
    app_id, key = new_app("quota-fires")
    assert call_api("PUT", f"/v1/apps/{app_id}/quota", key=ADMIN_KEY, body={"monthly_quota": 1}).status == 200
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": receiver.url("/ok")}).body["id"]
    base = datetime.now(UTC).replace(second=0, microsecond=0)
    clock.set_clock(clock.ShiftedClock(base))
    s = call_api(
        "POST",
        "/v1/schedules",
        key=key,
        body={"cron": f"1,2,3,4 {base.minute} {base.hour} * * *", "endpoint_ids": [ep]},
    ).body
    pump.deliveries(quiet_for=2.5)
    fires = sorted(FireModel.query(s["id"]), key=lambda f: f.fire_at)
    print([(f.status, f.error) for f in fires])
    assert [f.status for f in fires][:4] == ["CANCELLED", "FAILED", "FAILED", "FAILED"]
    assert "quota" in (fires[1].error or "")
    assert len(receiver.received("/ok")) == 0  # the pause cancelled the run dispatched ahead
    got = call_api("GET", f"/v1/schedules/{s['id']}", key=key).body
    assert got["status"] == "PAUSED"
    assert [n["kind"] for n in call_api("GET", "/v1/notifications", key=key).body["data"]] == [
        "SCHEDULE_AUTO_PAUSED"
    ]
    assert call_api("GET", "/v1/usage", key=key).body["schedule"] == 1
