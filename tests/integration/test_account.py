"""`GET /v1/account` tells a caller which kind of key it holds, so a client (the console) never has
to send a request it knows to be invalid to find out."""

from __future__ import annotations

from edgecron_testing.harness import call_api
from tests.integration.conftest import new_app


def test_an_app_key_is_told_it_is_an_app_key_of_its_app() -> None:
    app_id, key = new_app()
    resp = call_api("GET", "/v1/account", key=key)
    assert resp.status == 200
    assert resp.body == {"role": "app", "app_id": app_id}


def test_the_admin_key_is_told_it_is_the_admin_key(admin_key: str) -> None:
    resp = call_api("GET", "/v1/account", key=admin_key)
    assert resp.status == 200
    assert resp.body == {"role": "admin", "app_id": None}


def test_the_admin_key_still_reads_no_app_objects(admin_key: str) -> None:
    for path in ("/v1/endpoints", "/v1/usage", "/v1/notifications"):
        assert call_api("GET", path, key=admin_key).status == 401, path


def test_a_missing_or_unknown_key_is_401() -> None:
    for key in (None, "ek_nope", "wrong"):
        resp = call_api("GET", "/v1/account", key=key)
        assert resp.status == 401
        assert resp.body["error"]["code"] == "UNAUTHORIZED"
