"""An App's request rate, set by the operator: beyond it the App's requests are answered 429 with
Retry-After, and another App's requests are answered as before."""

from __future__ import annotations

from datetime import UTC, datetime

from edgecron import clock
from edgecron_testing.harness import call_api
from edgecron_testing.inprocess import ADMIN_KEY
from tests.integration.conftest import new_app

T0 = datetime(2026, 12, 1, 9, 0, 0, 500_000, tzinfo=UTC)


def set_rate(app_id: str, rate: int | None) -> dict[str, object]:
    resp = call_api("PUT", f"/v1/apps/{app_id}/rate-limit", key=ADMIN_KEY, body={"requests_per_sec": rate})
    assert resp.status == 200, resp.body
    return dict(resp.body)


def test_an_app_over_its_rate_gets_429_with_retry_after_and_another_app_does_not() -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    busy_id, busy = new_app("busy")
    _, calm = new_app("calm")
    assert set_rate(busy_id, 5) == {"app_id": busy_id, "requests_per_sec": 5}

    answers = [call_api("GET", "/v1/endpoints", key=busy).status for _ in range(8)]
    assert answers == [200] * 5 + [429] * 3
    refused = call_api("POST", "/v1/endpoints", key=busy, body={"url": "http://127.0.0.1:9/x"})
    assert refused.status == 429 and refused.headers["Retry-After"] == "1"
    assert refused.body["error"]["code"] == "RATE_LIMITED"
    assert [call_api("GET", "/v1/endpoints", key=calm).status for _ in range(20)] == [200] * 20

    fixed.advance(1)  # the next second has the whole rate again
    assert [call_api("GET", "/v1/endpoints", key=busy).status for _ in range(6)] == [200] * 5 + [429]

    set_rate(busy_id, None)  # cleared: only the stage's throttle, shared by every App
    fixed.advance(1)
    assert [call_api("GET", "/v1/endpoints", key=busy).status for _ in range(30)] == [200] * 30


def test_only_the_admin_key_sets_a_rate_and_only_of_an_app_that_exists() -> None:
    app_id, key = new_app("rated")
    body = {"requests_per_sec": 5}
    assert call_api("PUT", f"/v1/apps/{app_id}/rate-limit", key=key, body=body).status == 401
    missing = call_api("PUT", "/v1/apps/app_nope/rate-limit", key=ADMIN_KEY, body=body)
    assert missing.status == 404, missing.body
    for bad in [{"requests_per_sec": 0}, {"requests_per_sec": "5"}, {}]:
        resp = call_api("PUT", f"/v1/apps/{app_id}/rate-limit", key=ADMIN_KEY, body=bad)
        assert resp.status == 400 and resp.body["error"]["field"] in ("requests_per_sec", "body"), resp.body
