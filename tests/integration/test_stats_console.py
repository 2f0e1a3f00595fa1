"""GET /v1/stats/deliveries over real deliveries, and the console's files served by the API function."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump, new_app

# The statistics read the run list (the `by_app` index) right after the deliveries.
pytestmark = pytest.mark.index_lag(0)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def deliver(key: str, url: str, count: int) -> None:
    endpoint = call_api("POST", "/v1/endpoints", key=key, body={"url": url}).body
    for _ in range(count):
        assert call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": endpoint["id"]}).status == 201


def test_deliveries_success_rate_and_latency_of_the_last_hour(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    receiver.script("/bad", Reply(status=400))
    deliver(app_key, receiver.url("/ok"), 3)
    deliver(app_key, receiver.url("/bad"), 1)
    pump.deliveries()
    resp = call_api("GET", "/v1/stats/deliveries", key=app_key)
    assert resp.status == 200, resp.body
    stats = resp.body
    assert (stats["window"], stats["bucket_seconds"], len(stats["buckets"])) == ("hour", 60, 60)
    assert (stats["delivered"], stats["failed"], stats["success_rate"]) == (3, 1, 0.75)
    assert sum(b["delivered"] for b in stats["buckets"]) == 3
    assert sum(b["failed"] for b in stats["buckets"]) == 1
    assert (
        stats["latency_ms"]["samples"] == 4 and 0 <= stats["latency_ms"]["p50"] <= stats["latency_ms"]["p99"]
    )
    assert stats["truncated"] is False


def test_the_day_window_has_quarter_hour_buckets_and_an_app_sees_only_its_own(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    deliver(app_key, receiver.url("/ok"), 2)
    pump.deliveries()
    day = call_api("GET", "/v1/stats/deliveries", key=app_key, query={"window": "day"}).body
    assert (day["bucket_seconds"], len(day["buckets"]), day["delivered"]) == (900, 96, 2)
    other = call_api("GET", "/v1/stats/deliveries", key=new_app("other")[1]).body
    assert (other["delivered"], other["failed"], other["success_rate"]) == (0, 0, None)
    assert other["latency_ms"] == {"p50": None, "p99": None, "samples": 0}


def test_a_bad_window_is_a_400_in_the_error_format_and_no_key_is_a_401(app_key: str) -> None:
    resp = call_api("GET", "/v1/stats/deliveries", key=app_key, query={"window": "week"})
    assert resp.status == 400 and resp.body["error"]["code"] == "PARAM_INVALID"
    assert resp.body["error"]["field"] == "window"
    assert call_api("GET", "/v1/stats/deliveries").status == 401


@pytest.mark.parametrize("path", ["/console", "/console/", "/console/index.html"])
def test_the_console_page_needs_no_key_and_comes_with_a_strict_policy(path: str) -> None:
    resp = call_api("GET", path)
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/html")
    policy = resp.headers["Content-Security-Policy"]
    assert (
        "default-src 'none'" in policy and "script-src 'self'" in policy and "'unsafe-inline'" not in policy
    )
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert '<script type="module" src="/console/app.js">' in resp.body


@pytest.mark.parametrize(
    "name, content_type",
    [("app.js", "text/javascript"), ("console.css", "text/css"), ("uplot-1.6.32.min.js", "text/javascript")],
)
def test_every_asset_is_served_from_the_package(name: str, content_type: str) -> None:
    resp = call_api("GET", f"/console/{name}")
    assert resp.status == 200 and resp.headers["Content-Type"].startswith(content_type)
    assert "Content-Security-Policy" in resp.headers


@pytest.mark.parametrize("name", ["nope.js", "..", ".%2e", "__init__.py", "%2e%2e%2fresolver.py", "APP.JS"])
def test_anything_else_under_console_is_a_404(name: str) -> None:
    resp = call_api("GET", f"/console/{name}")
    assert resp.status == 404 and resp.body["error"]["code"] == "NOT_FOUND"


def test_the_statistics_of_one_endpoint_count_only_its_runs(
    app_key: str, receiver: Receiver, pump: Pump
) -> None:
    receiver.script("/bad", Reply(status=400))
    deliver(app_key, receiver.url("/ok"), 2)
    deliver(app_key, receiver.url("/bad"), 3)
    pump.deliveries()
    bad = next(
        e for e in call_api("GET", "/v1/endpoints", key=app_key).body["data"] if e["url"].endswith("/bad")
    )
    one = call_api("GET", "/v1/stats/deliveries", key=app_key, query={"endpoint_id": bad["id"]}).body
    assert (one["delivered"], one["failed"], one["success_rate"]) == (0, 3, 0.0)
    assert one["latency_ms"]["samples"] == 3
    every = call_api("GET", "/v1/stats/deliveries", key=app_key).body
    assert (every["delivered"], every["failed"]) == (2, 3)
    unknown = call_api(
        "GET", "/v1/stats/deliveries", key=app_key, query={"endpoint_id": "ep_01JDQ7Z8S5B0W6X3K2M9P4R7TV"}
    ).body
    assert (unknown["delivered"], unknown["failed"], unknown["truncated"]) == (0, 0, False)
