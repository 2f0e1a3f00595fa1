"""Key management with the admin key: list Apps; create, list, rotate (with a grace period) and
revoke an App's API keys. A key is shown once; a revoked key is refused by the next request; a
rotated key works until its grace period ends; every change is an App notification."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock
from edgecron.data import apps
from edgecron_testing.aws_fidelity import IndexTime
from edgecron_testing.harness import call_api
from tests.integration.conftest import new_app

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def fixed() -> clock.FixedClock:
    c = clock.FixedClock(T0)
    clock.set_clock(c)
    return c


def works(key: str) -> bool:
    status = call_api("GET", "/v1/endpoints", key=key).status
    assert status in (200, 401), status
    return status == 200


def keys_of(admin_key: str, app_id: str, index_time: IndexTime) -> list[dict[str, Any]]:
    index_time.settle()
    resp = call_api("GET", f"/v1/apps/{app_id}/keys", key=admin_key)
    assert resp.status == 200, resp.body
    return list(resp.body["data"])


def notes(key: str) -> list[dict[str, Any]]:
    return list(call_api("GET", "/v1/notifications", key=key).body["data"])


def test_apps_are_listed_page_by_page_to_the_admin_key_only(admin_key: str) -> None:
    made = {new_app(f"listed-{i}")[0] for i in range(3)}
    seen: set[str] = set()
    cursor = None
    pages = 0
    while True:
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = call_api("GET", "/v1/apps", key=admin_key, query=query).body
        assert len(page["data"]) <= 2
        seen |= {a["id"] for a in page["data"]}
        pages += 1
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert made <= seen and pages >= 2
    _, app_key = new_app("not-admin")
    assert call_api("GET", "/v1/apps", key=app_key).status == 401
    bad = call_api("GET", "/v1/apps", key=admin_key, query={"cursor": "bm90LWEta2V5"})
    assert bad.status == 400 and bad.body["error"]["field"] == "cursor"


def test_a_key_is_created_shown_once_listed_and_its_use_recorded(
    admin_key: str, fixed: clock.FixedClock, index_time: IndexTime
) -> None:
    app_id, first = new_app("keys-created")
    fixed.advance(1)
    created = call_api("POST", f"/v1/apps/{app_id}/keys", key=admin_key, body={"name": "billing"})
    assert created.status == 201, created.body
    secret, key = created.body["api_key"], created.body["key"]
    assert secret.startswith("ek_") and key["prefix"] == secret[:7] and key["name"] == "billing"
    assert (key["state"], key["created_at"], key["last_used_at"]) == (
        "active",
        "2026-06-01T12:00:01.000Z",
        None,
    )
    fixed.advance(90)
    assert works(secret)
    listed = keys_of(admin_key, app_id, index_time)
    assert [k["id"] for k in listed] == [key["id"], listed[1]["id"]]  # newest first, then the App's first
    assert listed[0]["last_used_at"] == "2026-06-01T12:01:31.000Z" and listed[1]["prefix"] == first[:7]
    assert secret not in json.dumps(listed) and first not in json.dumps(listed)  # never shown twice
    [note] = notes(secret)
    assert note["kind"] == "API_KEY_CREATED" and note["data"]["key_id"] == key["id"]
    assert secret not in json.dumps(note)


def test_a_revoked_key_is_refused_once_the_revoke_answers_and_only_once_revocable(
    admin_key: str, fixed: clock.FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id, kept = new_app("keys-revoked")
    leaked = call_api("POST", f"/v1/apps/{app_id}/keys", key=admin_key).body
    assert works(leaked["api_key"])  # read, and remembered by this container
    # another container that read it a moment ago remembers it as well: the revoke waits that out
    remembered = dict(apps._KEY_APPS._entries)
    fixed.advance(1)
    started = clock.now()
    revoked = call_api("DELETE", f"/v1/apps/{app_id}/keys/{leaked['key']['id']}", key=admin_key)
    assert revoked.status == 200 and revoked.body["id"] == leaked["key"]["id"], revoked.body
    assert (clock.now() - started).total_seconds() == apps.KEY_REMEMBERED_MS / 1000
    monkeypatch.setattr(apps._KEY_APPS, "_entries", remembered)
    assert not works(leaked["api_key"])
    assert works(kept)
    again = call_api("DELETE", f"/v1/apps/{app_id}/keys/{leaked['key']['id']}", key=admin_key)
    assert again.status == 404 and again.body["error"]["field"] == "key_id"
    assert [n["kind"] for n in notes(kept)] == ["API_KEY_REVOKED", "API_KEY_CREATED"]


def test_a_rotated_key_works_for_the_default_24_hours_then_is_refused(
    admin_key: str, fixed: clock.FixedClock, index_time: IndexTime
) -> None:
    app_id, old = new_app("keys-rotated")
    [old_key] = keys_of(admin_key, app_id, index_time)
    rotated = call_api("POST", f"/v1/apps/{app_id}/keys/{old_key['id']}/rotate", key=admin_key)
    assert rotated.status == 201, rotated.body
    new = rotated.body["api_key"]
    previous = rotated.body["previous"]
    assert previous["state"] == "expiring" and previous["expires_at"] == "2026-06-02T12:00:00.000Z"
    assert previous["replaced_by"] == rotated.body["key"]["id"]
    assert works(old) and works(new)
    listed = {k["id"]: k for k in keys_of(admin_key, app_id, index_time)}
    assert (
        listed[old_key["id"]]["state"] == "expiring"
        and listed[rotated.body["key"]["id"]]["state"] == "active"
    )
    again = call_api("POST", f"/v1/apps/{app_id}/keys/{old_key['id']}/rotate", key=admin_key)
    assert again.status == 409, again.body
    fixed.advance(timedelta(hours=24).total_seconds() - 1)
    assert works(old)
    fixed.advance(1)
    assert not works(old) and works(new)
    assert [k["id"] for k in keys_of(admin_key, app_id, index_time)] == [rotated.body["key"]["id"]]
    [note] = notes(new)
    assert note["kind"] == "API_KEY_ROTATED" and note["data"]["expires_at"] == "2026-06-02T12:00:00.000Z"


@pytest.mark.parametrize(("grace", "old_works_for"), [(60, 60), (0, 0)])
def test_the_caller_chooses_the_grace_period(
    admin_key: str, fixed: clock.FixedClock, index_time: IndexTime, grace: int, old_works_for: int
) -> None:
    app_id, old = new_app(f"keys-grace-{grace}")
    [old_key] = keys_of(admin_key, app_id, index_time)
    body = {"grace_period_sec": grace}
    rotated = call_api("POST", f"/v1/apps/{app_id}/keys/{old_key['id']}/rotate", key=admin_key, body=body)
    assert rotated.status == 201, rotated.body
    if old_works_for:
        fixed.advance(old_works_for - 1)
        assert works(old)
        fixed.advance(1)
    else:
        assert rotated.body["previous"] is None
    assert not works(old) and works(rotated.body["api_key"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"grace_period_sec": -1}, "grace_period_sec"),
        ({"grace_period_sec": 30 * 86400 + 1}, "grace_period_sec"),
    ],
)
def test_a_grace_period_out_of_range_is_a_400(admin_key: str, body: dict[str, Any], field: str) -> None:
    app_id, key = new_app("keys-bad-grace")
    key_id = call_api("POST", f"/v1/apps/{app_id}/keys", key=admin_key).body["key"]["id"]
    resp = call_api("POST", f"/v1/apps/{app_id}/keys/{key_id}/rotate", key=admin_key, body=body)
    assert resp.status == 400 and resp.body["error"]["field"] == field, resp.body
    assert works(key)


def test_keys_of_another_app_or_no_app_are_not_found(admin_key: str) -> None:
    app_a, _ = new_app("keys-a")
    app_b, key_b = new_app("keys-b")
    key_id = call_api("POST", f"/v1/apps/{app_b}/keys", key=admin_key).body["key"]["id"]
    for method, path in [
        ("DELETE", f"/v1/apps/{app_a}/keys/{key_id}"),
        ("POST", f"/v1/apps/{app_a}/keys/{key_id}/rotate"),
        ("DELETE", f"/v1/apps/{app_a}/keys/key_not-a-key"),
        ("GET", "/v1/apps/app_NOPE/keys"),
        ("POST", "/v1/apps/app_NOPE/keys"),
    ]:
        assert call_api(method, path, key=admin_key).status == 404, (method, path)
    assert works(key_b)
    assert call_api("GET", f"/v1/apps/{app_b}/keys", key=key_b).status == 401  # admin key only
