"""A request body is a JSON object or nothing: a list, a string, a number, true/false or null is a 400
that names the body, on every route that takes a body, and nothing is stored or changed."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from edgecron.api.resolver import build_api, openapi_json
from edgecron.data import apps as app_data
from edgecron.data.models import AppModel
from edgecron_testing.harness import call_api, new_endpoint
from edgecron_testing.inprocess import ADMIN_KEY
from tests.integration.conftest import new_app

EP = {"url": "http://127.0.0.1:9/a"}
# a valid body for each route: wrapped in a list it must still be refused
VALID: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/apps"): {"name": "wrapped"},
    ("PUT", "/v1/apps/{app_id}/quota"): {"monthly_quota": 5},
    ("PUT", "/v1/apps/{app_id}/rate-limit"): {"requests_per_sec": 50},
    ("POST", "/v1/apps/{app_id}/keys"): {"name": "wrapped"},
    ("POST", "/v1/apps/{app_id}/keys/{key_id}/rotate"): {"grace_period_sec": 86400},
    ("POST", "/v1/endpoints"): EP,
    ("PATCH", "/v1/endpoints/{endpoint_id}"): {"active": False},
    ("POST", "/v1/endpoints/{endpoint_id}/recover"): {"since": "2020-01-01T00:00:00Z"},
    ("POST", "/v1/retry-policies"): {"max_attempts": 2},
    ("PATCH", "/v1/retry-policies/{policy_id}"): {"max_attempts": 7},
    ("POST", "/v1/schedules"): {"cron": "* * * * *", "endpoint_ids": []},
    ("PATCH", "/v1/schedules/{schedule_id}"): {"name": "renamed"},
    ("POST", "/v1/schedules/{schedule_id}/pause"): {"reason": "wrapped"},
    ("POST", "/v1/task-runs"): {"endpoint_id": "{endpoint_id}"},
    ("POST", "/v1/events"): {"name": "invoice.paid"},
    ("POST", "/v1/dead-letters/replay"): {},
}
NOT_OBJECTS = ["[null, null]", '"garbage"', "5", "true", "null", "[]"]


def body_routes() -> list[tuple[str, str]]:
    """(method, path) of every route whose OpenAPI operation takes a request body."""
    document = json.loads(openapi_json(build_api()))
    return sorted(
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation
    )


def test_every_route_that_takes_a_body_is_covered() -> None:
    assert set(body_routes()) <= set(VALID), sorted(set(body_routes()) - set(VALID))


def world() -> tuple[str, dict[str, str]]:
    """An App key and the ids of one of each object the routes' paths name."""
    app_id, key = new_app()
    endpoint_id = new_endpoint(key, EP["url"])
    policy = call_api("POST", "/v1/retry-policies", key=key, body={"max_attempts": 3}).body
    schedule = call_api("POST", "/v1/schedules", key=key, body={"cron": "0 0 1 1 *", "endpoint_ids": []}).body
    second_key = call_api("POST", f"/v1/apps/{app_id}/keys", key=ADMIN_KEY, body={"name": "second"}).body
    ids = {
        "key_id": second_key["key"]["id"],
        "app_id": app_id,
        "endpoint_id": endpoint_id,
        "policy_id": policy["id"],
        "schedule_id": schedule["id"],
    }
    return key, ids


def observed(key: str, ids: dict[str, str]) -> Any:
    """What a client and the operator can see of the App."""
    app = app_data.get_app(ids["app_id"])
    return {
        "quota": app.monthly_quota if app else None,
        "app_count": len(list(AppModel.scan())),
        **{
            path: call_api("GET", path, key=key).body
            for path in [
                "/v1/endpoints",
                "/v1/retry-policies",
                "/v1/schedules",
                "/v1/task-runs",
                "/v1/events",
                "/v1/dead-letters",
            ]
        },
    }


def fill(text: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], text)


@pytest.mark.parametrize("route", sorted(VALID), ids=lambda r: f"{r[0]} {r[1]}")
def test_a_body_that_is_not_an_object_is_a_400_naming_the_body(route: tuple[str, str]) -> None:
    method, path = route
    key, ids = world()
    caller = ADMIN_KEY if path.startswith("/v1/apps") else key
    valid = json.loads(fill(json.dumps(VALID[route]), ids))
    before = observed(key, ids)
    for raw in [json.dumps([valid, {"url": 5, "bogus": True}, "garbage"]), json.dumps([valid]), *NOT_OBJECTS]:
        resp = call_api(method, fill(path, ids), key=caller, raw_body=raw)
        assert resp.status == 400, (raw, resp.status, resp.body)
        assert resp.body["error"]["code"] == "PARAM_INVALID", resp.body
        assert resp.body["error"]["field"] == "body", resp.body
        assert "object" in resp.body["error"]["message"], resp.body
    assert observed(key, ids) == before
    # the same body as an object is accepted: the refusal is about the shape alone
    ok = call_api(method, fill(path, ids), key=caller, body=valid)
    assert ok.status < 300, (ok.status, ok.body)
