"""The OpenAPI document states what the API accepts: a PATCH field it declares nullable takes null
(with the meaning its description gives), one it does not is refused with null (400 naming it); the
event name pattern, the Idempotency-Key rule and the statuses a schedule may be given are the
server's own."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from edgecron.api.resolver import build_api, openapi_json
from edgecron_testing.harness import call_api
from edgecron_testing.harness import new_endpoint as endpoint

DOC: dict[str, Any] = json.loads(openapi_json(build_api()))


def schema(name: str) -> dict[str, Any]:
    return dict(DOC["components"]["schemas"][name])


def nullable(prop: dict[str, Any]) -> bool:
    if not {"type", "$ref", "anyOf", "enum"} & prop.keys():
        return True  # any JSON value (a payload), null included
    return any(branch.get("type") == "null" for branch in prop.get("anyOf", []))


def fields(name: str) -> list[tuple[str, bool]]:
    return [(field, nullable(prop)) for field, prop in schema(name)["properties"].items()]


def make_policy(key: str) -> str:
    return str(call_api("POST", "/v1/retry-policies", key=key, body={"name": "p"}).body["id"])


def make_endpoint(key: str) -> str:
    return endpoint(key)


def make_schedule(key: str) -> str:
    body = {"cron": "0 9 * * *", "status": "PAUSED", "name": "s", "jitter_sec": 30, "overlap_policy": "SKIP"}
    resp = call_api("POST", "/v1/schedules", key=key, body=body)
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


RESOURCES = [
    ("RetryPolicyUpdate", "/v1/retry-policies", make_policy),
    ("EndpointUpdate", "/v1/endpoints", make_endpoint),
    ("ScheduleUpdate", "/v1/schedules", make_schedule),
]
# A schedule has one of cron and at: null for the one it has, with no other, leaves it with neither.
NEEDS_THE_OTHER_FORM = {("ScheduleUpdate", "cron")}


@pytest.mark.parametrize(
    ("schema_name", "path", "field", "is_nullable"),
    [(s, p, f, n) for s, p, _ in RESOURCES for f, n in fields(s)],
    ids=[f"{s}.{f}" for s, _, _ in RESOURCES for f, _ in fields(s)],
)
def test_a_patch_takes_null_exactly_where_the_document_says(
    app_key: str, schema_name: str, path: str, field: str, is_nullable: bool
) -> None:
    make = next(m for s, _, m in RESOURCES if s == schema_name)
    object_id = make(app_key)
    resp = call_api("PATCH", f"{path}/{object_id}", key=app_key, body={field: None})
    if (schema_name, field) in NEEDS_THE_OTHER_FORM:
        assert resp.status == 400 and "give either cron or at" in resp.body["error"]["message"], resp.body
    elif is_nullable:
        assert resp.status == 200, (field, resp.body)
    else:
        assert resp.status == 400 and resp.body["error"]["field"] == field, (field, resp.body)
        assert resp.body["error"]["message"] == f"{field} cannot be null"


def test_null_jitter_and_overlap_go_back_to_their_defaults_and_null_at_keeps_the_cron(app_key: str) -> None:
    schedule_id = make_schedule(app_key)
    changed = call_api(
        "PATCH",
        f"/v1/schedules/{schedule_id}",
        key=app_key,
        body={"jitter_sec": None, "overlap_policy": None, "at": None, "status": None},
    )
    assert changed.status == 200, changed.body
    body = changed.body
    assert (body["jitter_sec"], body["overlap_policy"], body["cron"], body["status"]) == (
        0,
        "ALLOW",
        "0 9 * * *",
        "PAUSED",
    )


@pytest.mark.parametrize(
    ("name", "accepted"),
    [
        ("invoice.paid", True),
        ("a", True),
        ("order_2.shipped-late", True),
        ("edgecron", True),
        ("edgecron.schedule.paused", False),
        ("invoice..paid", False),
        (".invoice", False),
        ("invoice.", False),
        ("invoice paid", False),
        ("invoice.*", False),
        ("x" * 129, False),
    ],
)
def test_the_documented_event_name_pattern_is_the_servers_rule(
    app_key: str, name: str, accepted: bool
) -> None:
    rule = schema("EventCreate")["properties"]["name"]
    documented = len(name) <= rule["maxLength"] and re.search(rule["pattern"], name) is not None
    resp = call_api("POST", "/v1/events", key=app_key, body={"name": name})
    assert documented == accepted
    assert (resp.status == 202) == accepted, (name, resp.body)
    if not accepted:
        assert resp.body["error"]["field"] == "name"


@pytest.mark.parametrize(("value", "accepted"), [("k-1", True), ("", False), ("   ", False)])
def test_the_documented_idempotency_key_rule_is_the_servers(app_key: str, value: str, accepted: bool) -> None:
    [param] = [
        p for p in DOC["paths"]["/v1/retry-policies"]["post"]["parameters"] if p["name"] == "idempotency-key"
    ]
    rule = param["schema"]
    assert "anyOf" not in rule  # a header is a string or absent, never null
    documented = len(value) >= rule["minLength"] and re.search(rule["pattern"], value) is not None
    resp = call_api("POST", "/v1/retry-policies", key=app_key, body={}, headers={"Idempotency-Key": value})
    assert documented == accepted
    assert (resp.status == 201) == accepted, resp.body
    if not accepted:
        assert resp.body["error"]["field"] == "Idempotency-Key"


def test_a_schedule_is_created_or_set_only_with_the_statuses_the_document_lists(app_key: str) -> None:
    create_enum = schema("ScheduleCreate")["properties"]["status"]["enum"]
    update_enum = next(b for b in schema("ScheduleUpdate")["properties"]["status"]["anyOf"] if "enum" in b)[
        "enum"
    ]
    assert create_enum == update_enum == ["ACTIVE", "PAUSED"]
    for status in ["ACTIVE", "PAUSED", "ENDED", "active"]:
        resp = call_api("POST", "/v1/schedules", key=app_key, body={"cron": "0 9 * * *", "status": status})
        assert (resp.status == 201) == (status in create_enum), (status, resp.body)
    schedule_id = make_schedule(app_key)
    ended = call_api("PATCH", f"/v1/schedules/{schedule_id}", key=app_key, body={"status": "ENDED"})
    assert ended.status == 400 and ended.body["error"]["field"] == "status"
