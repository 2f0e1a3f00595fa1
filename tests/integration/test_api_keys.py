"""API keys: an App's key is read once per container; a key never seen is read every time."""

from __future__ import annotations

from edgecron import clock
from edgecron.data import apps
from edgecron.data.models import ApiKeyModel
from edgecron_testing.harness import call_api
from tests.integration.conftest import new_app


def test_a_known_key_is_answered_without_another_read() -> None:
    _, key = new_app("keys")
    assert call_api("GET", "/v1/endpoints", key=key).status == 200  # the first request reads the key
    ApiKeyModel(key_hash=apps.hash_key(key)).delete()  # what a second read would now miss
    again = call_api("GET", "/v1/endpoints", key=key)
    assert again.status == 200 and again.body["data"] == []
    assert apps.app_for_key(key) is None  # another function's lookups remember only their own reads


def test_an_unknown_key_is_refused_and_read_again_once_it_exists() -> None:
    app_id, _ = new_app("keys-later")
    key = apps.KEY_PREFIX + "not-yet-created-0123456789abcdef0123456789"
    assert call_api("GET", "/v1/endpoints", key=key).status == 401
    assert apps.app_for_key(key) is None  # a miss is not remembered
    ApiKeyModel(
        key_hash=apps.hash_key(key), app_id=app_id, prefix=key[:7], created_at=clock.to_ms(clock.now())
    ).save()
    assert apps.app_for_key(key) == app_id
    assert call_api("GET", "/v1/endpoints", key=key).status == 200


def test_what_the_container_remembers_is_bounded() -> None:
    keys = [new_app(f"bound-{i}")[1] for i in range(3)]
    saved = apps.KEY_APPS_REMEMBERED
    apps.KEY_APPS_REMEMBERED = 2
    try:
        for key in keys:
            assert apps.app_for_key(key) is not None
        assert len(apps._KEY_APPS) <= 2
    finally:
        apps.KEY_APPS_REMEMBERED = saved
