"""What the API remembers of an App, for a short time per container: its key (a key deleted by hand
is refused once the memory lapses; a revoke through the API waits that out) and its quota."""

from __future__ import annotations

import pytest

from edgecron import clock
from edgecron.data import apps
from edgecron.data.models import ApiKeyModel, AppModel
from edgecron_testing.harness import call_api, new_endpoint
from tests.integration.conftest import new_app

REMEMBERED_SEC = apps.REMEMBERED_MS / 1000
KEY_REMEMBERED_SEC = apps.KEY_REMEMBERED_MS / 1000


def frozen_clock() -> clock.FixedClock:
    """Time stands still until the test moves it (each test starts on the real clock again)."""
    fixed = clock.FixedClock(clock.now().replace(microsecond=0))  # on a whole millisecond
    clock.set_clock(fixed)
    return fixed


def test_a_known_key_is_answered_without_another_read_until_it_is_due_again() -> None:
    fixed = frozen_clock()
    _, key = new_app("keys")
    assert call_api("GET", "/v1/endpoints", key=key).status == 200  # the first request reads the key
    ApiKeyModel(key_hash=apps.hash_key(key)).delete()  # deleted by hand: a read now finds nothing
    fixed.advance(KEY_REMEMBERED_SEC - 0.001)
    again = call_api("GET", "/v1/endpoints", key=key)
    assert again.status == 200 and again.body["data"] == []
    fixed.advance(0.001)
    assert call_api("GET", "/v1/endpoints", key=key).status == 401


def test_a_keys_last_use_is_recorded_when_it_is_read_at_most_once_a_minute() -> None:
    fixed = frozen_clock()
    _, key = new_app("keys-used")
    first = clock.to_ms(clock.now())
    assert call_api("GET", "/v1/endpoints", key=key).status == 200  # read: its first use
    fixed.advance(59)
    assert call_api("GET", "/v1/endpoints", key=key).status == 200  # read again, within the minute
    assert ApiKeyModel.get(apps.hash_key(key)).last_used_at == first
    fixed.advance(KEY_REMEMBERED_SEC)
    assert call_api("GET", "/v1/endpoints", key=key).status == 200  # read again, a minute on
    assert ApiKeyModel.get(apps.hash_key(key)).last_used_at == first + (59 + KEY_REMEMBERED_SEC) * 1000


def test_an_unknown_key_is_refused_and_read_again_once_it_exists() -> None:
    app_id, _ = new_app("keys-later")
    key = apps.KEY_PREFIX + "not-yet-created-0123456789abcdef0123456789"
    assert call_api("GET", "/v1/endpoints", key=key).status == 401
    ApiKeyModel(
        key_hash=apps.hash_key(key), app_id=app_id, prefix=key[:7], created_at=clock.to_ms(clock.now())
    ).save()
    assert call_api("GET", "/v1/endpoints", key=key).status == 200  # a miss was not remembered


def test_a_quota_set_elsewhere_applies_once_the_remembered_app_is_due_again() -> None:
    fixed = frozen_clock()
    app_id, key = new_app("quota-elsewhere")
    run = {"endpoint_id": new_endpoint(key), "delay_sec": 3600}
    assert call_api("POST", "/v1/task-runs", key=key, body=run).status == 201  # reads the App: no quota
    AppModel(app_id=app_id).update(actions=[AppModel.monthly_quota.set(1)])  # another container's write
    assert call_api("POST", "/v1/task-runs", key=key, body=run).status == 201
    fixed.advance(REMEMBERED_SEC)
    refused = call_api("POST", "/v1/task-runs", key=key, body=run)
    assert refused.status == 429 and refused.body["error"]["code"] == "QUOTA_EXCEEDED"


def test_a_quota_set_through_this_container_applies_at_once(admin_key: str) -> None:
    app_id, key = new_app("quota-here")
    run = {"endpoint_id": new_endpoint(key), "delay_sec": 3600}
    assert call_api("POST", "/v1/task-runs", key=key, body=run).status == 201
    put = call_api("PUT", f"/v1/apps/{app_id}/quota", key=admin_key, body={"monthly_quota": 1})
    assert put.status == 200, put.body
    assert call_api("POST", "/v1/task-runs", key=key, body=run).status == 429


def test_what_a_container_remembers_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apps._KEY_APPS, "max_entries", 2)
    for i in range(3):
        assert call_api("GET", "/v1/endpoints", key=new_app(f"bound-key-{i}")[1]).status == 200
    assert len(apps._KEY_APPS) <= 2
    monkeypatch.setattr(apps._QUOTAS, "max_entries", 2)
    for i in range(3):
        key = new_app(f"bound-{i}")[1]
        run = {"endpoint_id": new_endpoint(key), "delay_sec": 3600}
        assert call_api("POST", "/v1/task-runs", key=key, body=run).status == 201  # reads the quota
    assert len(apps._QUOTAS) <= 2
