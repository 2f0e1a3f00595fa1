"""Tenant isolation over every route of the OpenAPI document: App B's key on App A's objects gets 404
and changes nothing; B's list filters and bulk replay never see A's objects."""

from __future__ import annotations

import re
from typing import Any

from edgecron.data import runs as run_data
from edgecron.data.keys import run_partition
from edgecron.data.models import TaskRunModel
from edgecron_testing.harness import call_api
from tests.integration.conftest import Pump, new_app

BODIES: dict[str, Any] = {"PATCH": {}, "PUT": {"monthly_quota": 5}, "POST": None}
BODY_OF_PATH: dict[str, Any] = {"/v1/endpoints/{endpoint_id}/recover": {"since": "2026-01-01T00:00:00Z"}}


def _a_world() -> tuple[str, str, dict[str, str]]:
    """App A with one object of every kind; returns (app_id, key, path parameter values)."""
    app_id, key = new_app("tenant-a")
    ep = call_api("POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/a"}).body
    rp = call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 1}).body
    sch = call_api("POST", "/v1/schedules", key=key, body={"cron": "0 0 1 1 *", "status": "PAUSED"}).body
    evt = call_api("POST", "/v1/events", key=key, body={"name": "a.happened"}).body
    run = call_api("POST", "/v1/task-runs", key=key, body={"endpoint_id": ep["id"], "delay_sec": 3600}).body
    return (
        app_id,
        key,
        {
            "endpoint_id": ep["id"],
            "policy_id": rp["id"],
            "schedule_id": sch["id"],
            "event_id": evt["id"],
            "run_id": run["id"],
            "app_id": app_id,
        },
    )


def _snapshot(key: str, ids: dict[str, str]) -> list[Any]:
    return [
        call_api("GET", f"/v1/endpoints/{ids['endpoint_id']}", key=key).body,
        call_api("GET", f"/v1/retry-policies/{ids['policy_id']}", key=key).body,
        call_api("GET", f"/v1/schedules/{ids['schedule_id']}", key=key).body,
        call_api("GET", f"/v1/task-runs/{ids['run_id']}", key=key).body["status"],
    ]


def test_every_route_with_an_id_answers_404_to_another_app() -> None:
    _, key_a, ids = _a_world()
    _, key_b = new_app("tenant-b")
    before = _snapshot(key_a, ids)
    paths = call_api("GET", "/openapi.json").body["paths"]
    checked = 0
    for path, operations in paths.items():
        params = re.findall(r"\{(\w+)\}", path)
        if not params or path.startswith("/v1/apps"):
            continue
        concrete = path
        for name in params:
            concrete = concrete.replace("{" + name + "}", ids[name])
        for method in operations:
            body = BODY_OF_PATH.get(path, BODIES.get(method.upper()))
            resp = call_api(method.upper(), concrete, key=key_b, body=body)
            assert resp.status == 404, (method, concrete, resp.status, resp.body)
            assert resp.body["error"]["code"] == "NOT_FOUND"
            checked += 1
    assert checked >= 18
    assert _snapshot(key_a, ids) == before


def test_admin_routes_need_the_admin_key() -> None:
    app_id, key_a, _ = _a_world()
    for method, path, body in [
        ("POST", "/v1/apps", {"name": "x"}),
        ("PUT", f"/v1/apps/{app_id}/quota", {"monthly_quota": 1}),
    ]:
        resp = call_api(method, path, key=key_a, body=body)
        assert resp.status == 401 and resp.body == {
            "error": {"code": "UNAUTHORIZED", "message": "missing or invalid API key"}
        }


def test_list_filters_and_bulk_replay_never_cross_apps(pump: Pump) -> None:
    _, key_a, ids = _a_world()
    _, key_b = new_app("tenant-b")
    run = TaskRunModel.get(run_partition(ids["app_id"], ids["run_id"]), ids["run_id"])
    run_data.poison(run, run.deliver_at, "made a dead letter for the test")  # at its due time
    for path, query in [
        ("/v1/task-runs", {"endpoint_id": ids["endpoint_id"]}),
        ("/v1/dead-letters", {"endpoint_id": ids["endpoint_id"]}),
        ("/v1/dead-letters", {}),
        ("/v1/events", {"name": "a.happened"}),
        ("/v1/endpoints", {}),
        ("/v1/schedules", {}),
        ("/v1/retry-policies", {}),
        ("/v1/notifications", {}),
    ]:
        resp = call_api("GET", path, key=key_b, query=query)
        assert resp.status == 200 and resp.body["data"] == [], (path, resp.body)
    replay = call_api("POST", "/v1/dead-letters/replay", key=key_b, body={"endpoint_id": ids["endpoint_id"]})
    assert replay.body == {"replayed": 0, "skipped": 0, "has_more": False, "next_cursor": None}
    assert call_api("GET", f"/v1/task-runs/{ids['run_id']}", key=key_a).body["status"] == "dead_letter"
    usage_b = call_api("GET", "/v1/usage", key=key_b).body
    assert usage_b["total"] == 0
