"""The API base: auth, the error format, validation that stores nothing, pagination, idempotency,
the OpenAPI document, and Apps / Endpoints / Retry Policies."""

from __future__ import annotations

import json
from typing import Any

from standardwebhooks.webhooks import Webhook

from edgecron.api.resolver import Resolver, build_api, openapi_json
from edgecron_testing.harness import FakeContext, api_event, call_api, response_body
from edgecron_testing.iam import acting_as
from tests.integration.conftest import new_app

EP = {"url": "http://127.0.0.1:9/hook"}


def test_create_app_needs_the_admin_key(app_key: str) -> None:
    assert call_api("POST", "/v1/apps", body={"name": "x"}).status == 401
    assert call_api("POST", "/v1/apps", body={"name": "x"}, key=app_key).status == 401
    resp = call_api("POST", "/v1/apps", body={"name": "x"}, key="wrong")
    assert resp.status == 401
    assert resp.body == {"error": {"code": "UNAUTHORIZED", "message": "missing or invalid API key"}}


def test_missing_or_bad_key_is_401_without_detail() -> None:
    for key in (None, "ek_nope"):
        resp = call_api("GET", "/v1/endpoints", key=key)
        assert resp.status == 401
        assert resp.body["error"]["code"] == "UNAUTHORIZED"
    resp = call_api("GET", "/v1/endpoints", headers={"authorization": "Basic abc"})
    assert resp.status == 401


def test_endpoint_crud_and_secret_shown_only_at_create_and_rotate(app_key: str) -> None:
    created = call_api(
        "POST",
        "/v1/endpoints",
        key=app_key,
        body={**EP, "filter_events": ["invoice.*"], "headers": {"X-Team": "a"}},
    )
    assert created.status == 201, created.body
    ep = created.body
    assert ep["secret"].startswith("whsec_")
    Webhook(ep["secret"])  # a valid Standard Webhooks secret
    assert ep["method"] == "POST" and ep["timeout_ms"] == 10_000 and ep["active"] is True

    got = call_api("GET", f"/v1/endpoints/{ep['id']}", key=app_key)
    assert got.status == 200 and "secret" not in got.body and got.body["filter_events"] == ["invoice.*"]

    patched = call_api(
        "PATCH", f"/v1/endpoints/{ep['id']}", key=app_key, body={"active": False, "method": "PUT"}
    )
    assert patched.status == 200 and patched.body["active"] is False and patched.body["method"] == "PUT"

    rotated = call_api("POST", f"/v1/endpoints/{ep['id']}/rotate-secret", key=app_key)
    assert rotated.status == 200 and rotated.body["secret"] != ep["secret"]

    listed = call_api("GET", "/v1/endpoints", key=app_key)
    assert [e["id"] for e in listed.body["data"]] == [ep["id"]]
    assert all("secret" not in e for e in listed.body["data"])

    assert call_api("DELETE", f"/v1/endpoints/{ep['id']}", key=app_key).status == 204
    assert call_api("GET", f"/v1/endpoints/{ep['id']}", key=app_key).status == 404


def test_bad_input_gets_400_with_field_and_stores_nothing(app_key: str) -> None:
    cases = [
        ({"url": "ftp://x/y"}, "url"),
        ({"url": "not a url"}, "url"),
        ({**EP, "method": "TRACE"}, "method"),
        ({**EP, "timeout_ms": 5}, "timeout_ms"),
        ({**EP, "headers": {"Host": "evil"}}, "headers.Host"),
        ({**EP, "headers": {"webhook-id": "x"}}, "headers.webhook-id"),
        ({**EP, "filter_events": ["bad pattern!"]}, "filter_events.0"),
        ({**EP, "unknown": 1}, "unknown"),
        ({**EP, "retry_policy_id": "rp_MISSING"}, "retry_policy_id"),
        ({}, "url"),
    ]
    for body, field in cases:
        resp = call_api("POST", "/v1/endpoints", key=app_key, body=body)
        assert resp.status == 400, (body, resp.body)
        assert resp.body["error"]["code"] == "PARAM_INVALID"
        assert resp.body["error"]["field"] == field, (body, resp.body)
    bad_json = call_api("POST", "/v1/endpoints", key=app_key, raw_body="{nope")
    assert bad_json.status == 400 and bad_json.body["error"]["field"] == "body"
    assert call_api("GET", "/v1/endpoints", key=app_key).body["data"] == []


def test_another_apps_key_gets_404_and_changes_nothing(app_key: str, other_app_key: str) -> None:
    ep = call_api("POST", "/v1/endpoints", key=app_key, body=EP).body
    rp = call_api("POST", "/v1/retry-policies", key=app_key, body={"max_attempts": 5}).body
    for method, path, body in [
        ("GET", f"/v1/endpoints/{ep['id']}", None),
        ("PATCH", f"/v1/endpoints/{ep['id']}", {"active": False}),
        ("DELETE", f"/v1/endpoints/{ep['id']}", None),
        ("POST", f"/v1/endpoints/{ep['id']}/rotate-secret", None),
        ("GET", f"/v1/retry-policies/{rp['id']}", None),
        ("PATCH", f"/v1/retry-policies/{rp['id']}", {"max_attempts": 2}),
        ("DELETE", f"/v1/retry-policies/{rp['id']}", None),
    ]:
        resp = call_api(method, path, key=other_app_key, body=body)
        assert resp.status == 404, (method, path, resp.body)
        assert resp.body["error"]["code"] == "NOT_FOUND"
    assert call_api("GET", "/v1/endpoints", key=other_app_key).body["data"] == []
    assert call_api("GET", f"/v1/endpoints/{ep['id']}", key=app_key).body["active"] is True
    assert call_api("GET", f"/v1/retry-policies/{rp['id']}", key=app_key).body["max_attempts"] == 5


def test_cursor_pagination_walks_every_item_once(app_key: str) -> None:
    ids = {call_api("POST", "/v1/endpoints", key=app_key, body=EP).body["id"] for _ in range(7)}
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = {"limit": "3", **({"cursor": cursor} if cursor else {})}
        resp = call_api("GET", "/v1/endpoints", key=app_key, query=query)
        assert resp.status == 200
        seen += [e["id"] for e in resp.body["data"]]
        cursor = resp.body["next_cursor"]
        pages += 1
        if not cursor:
            break
    assert pages == 3 and len(seen) == 7 and set(seen) == ids
    assert seen == sorted(seen, reverse=True)  # newest first
    for bad in ({"limit": "0"}, {"limit": "101"}, {"cursor": "garbage!"}):
        assert call_api("GET", "/v1/endpoints", key=app_key, query=bad).status == 400


def test_a_cursor_from_another_app_is_refused(app_key: str, other_app_key: str) -> None:
    for _ in range(2):
        call_api("POST", "/v1/endpoints", key=app_key, body=EP)
    cursor = call_api("GET", "/v1/endpoints", key=app_key, query={"limit": "1"}).body["next_cursor"]
    resp = call_api("GET", "/v1/endpoints", key=other_app_key, query={"limit": "1", "cursor": cursor})
    assert resp.status == 400 and resp.body["error"]["field"] == "cursor"


def test_idempotency_key_replays_and_conflicts(app_key: str) -> None:
    first = call_api("POST", "/v1/endpoints", key=app_key, body=EP, headers={"Idempotency-Key": "k1"})
    again = call_api("POST", "/v1/endpoints", key=app_key, body=EP, headers={"Idempotency-Key": "k1"})
    assert first.status == again.status == 201
    assert again.body == {k: v for k, v in first.body.items() if k != "secret"}  # shown once
    assert again.headers.get("idempotent-replayed") == "true"
    other = call_api(
        "POST",
        "/v1/endpoints",
        key=app_key,
        body={"url": "http://127.0.0.1:9/other"},
        headers={"Idempotency-Key": "k1"},
    )
    assert other.status == 409 and other.body["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert len(call_api("GET", "/v1/endpoints", key=app_key).body["data"]) == 1
    # a refused request does not burn its key
    bad = call_api(
        "POST", "/v1/endpoints", key=app_key, body={"url": "ftp://x"}, headers={"Idempotency-Key": "k2"}
    )
    assert bad.status == 400
    ok = call_api(
        "POST",
        "/v1/endpoints",
        key=app_key,
        body=EP | {"description": "d"},
        headers={"Idempotency-Key": "k2"},
    )
    assert ok.status == 201


def test_retry_policies_crud_default_and_validation(app_key: str) -> None:
    default = call_api("GET", "/v1/retry-policies/default", key=app_key)
    assert default.status == 200
    assert (default.body["strategy"], default.body["max_attempts"], default.body["base_delay_sec"]) == (
        "fixed",
        3,
        300,
    )
    created = call_api(
        "POST",
        "/v1/retry-policies",
        key=app_key,
        body={
            "strategy": "exponential",
            "max_attempts": 6,
            "base_delay_sec": 2,
            "max_delay_sec": 60,
            "jitter": True,
        },
    )
    assert created.status == 201, created.body
    pid = created.body["id"]
    for body, field in [
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": 21}, "max_attempts"),
        ({"strategy": "random"}, "strategy"),
        ({"base_delay_sec": 100, "max_delay_sec": 10}, "max_delay_sec"),
        ({"base_delay_sec": 86_401}, "base_delay_sec"),
    ]:
        resp = call_api("POST", "/v1/retry-policies", key=app_key, body=body)
        assert resp.status == 400 and resp.body["error"]["field"] == field, (body, resp.body)
    bad_patch = call_api("PATCH", f"/v1/retry-policies/{pid}", key=app_key, body={"max_delay_sec": 1})
    assert bad_patch.status == 400 and bad_patch.body["error"]["field"] == "max_delay_sec"
    assert call_api("GET", f"/v1/retry-policies/{pid}", key=app_key).body["max_delay_sec"] == 60
    ep = call_api("POST", "/v1/endpoints", key=app_key, body={**EP, "retry_policy_id": pid}).body
    in_use = call_api("DELETE", f"/v1/retry-policies/{pid}", key=app_key)
    assert in_use.status == 409
    call_api("DELETE", f"/v1/endpoints/{ep['id']}", key=app_key)
    assert call_api("DELETE", f"/v1/retry-policies/{pid}", key=app_key).status == 204
    assert (
        call_api("PATCH", "/v1/retry-policies/default", key=app_key, body={"max_attempts": 2}).status == 409
    )


def test_openapi_and_docs_are_served() -> None:
    spec = call_api("GET", "/openapi.json")
    assert spec.status == 200
    paths = spec.body["paths"]
    for path in (
        "/v1/apps",
        "/v1/endpoints",
        "/v1/endpoints/{endpoint_id}",
        "/v1/endpoints/{endpoint_id}/rotate-secret",
        "/v1/retry-policies",
        "/v1/retry-policies/{policy_id}",
        "/v1/task-runs",
    ):
        assert path in paths, path
    docs = call_api("GET", "/docs")
    assert docs.status == 200 and "swagger" in str(docs.body).lower()


def test_unknown_route_is_404_in_the_error_format(app_key: str) -> None:
    resp = call_api("GET", "/v1/nothing-here", key=app_key)
    assert resp.status == 404 and resp.body["error"]["code"] == "NOT_FOUND"


def test_apps_are_isolated_lists() -> None:
    _, key_a = new_app("a")
    _, key_b = new_app("b")
    call_api("POST", "/v1/endpoints", key=key_a, body=EP)
    assert len(call_api("GET", "/v1/endpoints", key=key_a).body["data"]) == 1
    assert call_api("GET", "/v1/endpoints", key=key_b).body["data"] == []


def test_auth_comes_before_validation_and_unreadable_bodies_are_400(app_key: str) -> None:
    assert call_api("POST", "/v1/endpoints", body={"url": 5}).status == 401
    multipart = call_api(
        "POST",
        "/v1/endpoints",
        key=app_key,
        raw_body='{"url": "http://127.0.0.1:9/x"}',
        headers={"content-type": "multipart/form-data"},
    )
    assert multipart.status == 400 and multipart.body["error"]["field"] == "content-type"
    event_body = call_api("POST", "/v1/endpoints", key=app_key, raw_body="\udcff")
    assert event_body.status == 400
    assert call_api("GET", "/v1/endpoints", key=app_key).body["data"] == []


def test_a_wrong_method_on_a_known_path_is_405(app_key: str) -> None:
    resp = call_api("PUT", "/v1/endpoints", key=app_key, body={})
    assert resp.status == 405 and resp.body["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert set(resp.headers["Allow"].split(", ")) == {"GET", "POST"}
    assert call_api("PUT", "/v1/nowhere", key=app_key).status == 404


def _first_container() -> Resolver:
    """A resolver as a new container builds it: no route loaded before its first request."""
    return build_api()


def _resolve(api: Resolver, method: str, path: str, key: str) -> tuple[int, Any, dict[str, str]]:
    with acting_as("api"):
        result = api.resolve(api_event(method, path, key=key), FakeContext("api"))
    return int(result["statusCode"]), response_body(result), dict(result.get("headers") or {})


def test_a_container_answers_405_from_every_route_whichever_request_comes_first(app_key: str) -> None:
    api = _first_container()
    status, body, headers = _resolve(api, "PUT", "/v1/endpoints", app_key)
    assert status == 405 and body["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert set(headers["Allow"].split(", ")) == {"GET", "POST"}
    status, _, headers = _resolve(api, "PUT", "/v1/schedules", app_key)
    assert status == 405 and set(headers["Allow"].split(", ")) == {"GET", "POST"}
    assert _resolve(api, "GET", "/v1/schedules", app_key)[0] == 200


def test_each_request_is_served_by_its_routes_whichever_came_before(app_key: str) -> None:
    api = _first_container()
    for path in ("/v1/schedules", "/v1/endpoints", "/v1/task-runs", "/v1/dead-letters", "/v1/usage"):
        assert _resolve(api, "GET", path, app_key)[0] == 200, path
    assert _resolve(api, "GET", "/v1/nothing-here", app_key)[0] == 404


def test_the_openapi_document_is_the_same_whichever_routes_a_container_served_first(app_key: str) -> None:
    api = _first_container()
    assert _resolve(api, "GET", "/v1/schedules", app_key)[0] == 200
    assert _resolve(api, "GET", "/v1/endpoints", app_key)[0] == 200
    status, served, _ = _resolve(api, "GET", "/openapi.json", app_key)
    assert status == 200
    assert served == json.loads(openapi_json(_first_container()))
    assert list(served["paths"]) == list(json.loads(openapi_json(_first_container()))["paths"])


def test_signing_secrets_are_encrypted_at_rest_with_kms(app_key: str) -> None:
    from edgecron.data import secret_box
    from edgecron.data.models import EndpointModel

    created = call_api("POST", "/v1/endpoints", key=app_key, body=EP).body
    stored = next(e for e in EndpointModel.scan() if e.endpoint_id == created["id"])
    sealed = stored.secrets[0].secret
    assert sealed.startswith(secret_box.ENVELOPE) and created["secret"] not in sealed
    assert created["secret"].removeprefix("whsec_") not in sealed
    assert secret_box.unseal(sealed) == created["secret"]


def test_a_body_that_is_not_utf8_is_a_400_for_a_caller_with_a_key_and_a_401_without(app_key: str) -> None:
    """The body is read by request validation before any route code; an unreadable one still
    answers in the error format, and only to a caller with a key."""
    import base64

    from edgecron_testing.harness import api_event, invoke, response_body

    def send(key: str | None) -> tuple[int, object]:
        event = api_event(
            "POST", "/v1/endpoints", key=key, raw_body=base64.b64encode(b'{"url": "\xff"}').decode()
        )
        event["isBase64Encoded"] = True
        result = invoke("api", event)
        return int(result["statusCode"]), response_body(result)

    assert send(None)[0] == 401
    status, body = send(app_key)
    assert (status, body) == (
        400,
        {
            "error": {
                "code": "PARAM_INVALID",
                "message": "request body is not valid UTF-8 JSON",
                "field": "body",
            }
        },
    )
