"""Two edits of the same Endpoint or retry policy at once: each is applied on top of the other (no
change is lost), and an edit that keeps losing the race is a 409 naming the object, with nothing of it
stored. The concurrent edit is a real write made right before the edit's own save."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from edgecron.data import endpoints as endpoint_data
from edgecron.data import retry_policies as policy_data
from edgecron_testing.harness import call_api
from edgecron_testing.inprocess import new_app


def racing(module: Any, other_edit: Callable[[], None], times: int) -> Iterator[None]:
    """Make another client's edit land right before each of the next `times` saves of `module`."""
    real = module.save
    left = [times]

    def save(*args: Any, **kwargs: Any) -> Any:
        if left[0] > 0:
            left[0] -= 1
            m.setattr(module, "save", real)  # the other client's own save is not raced
            other_edit()
            m.setattr(module, "save", save)
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(module, "save", save)
        yield


@pytest.fixture
def app() -> tuple[str, str]:
    """(app id, key) of a new App."""
    return new_app()


def endpoint(key: str) -> str:
    resp = call_api(
        "POST", "/v1/endpoints", key=key, body={"url": "http://127.0.0.1:9/a", "description": "first"}
    )
    assert resp.status == 201, resp.body
    return str(resp.body["id"])


def test_an_endpoint_edit_racing_another_keeps_both_changes(app: tuple[str, str]) -> None:
    app_id, app_key = app
    ep = endpoint(app_key)

    def other() -> None:
        stored = endpoint_data.get(app_id, ep, consistent=True)
        assert stored is not None
        assert endpoint_data.save(replace(stored, description="second")) is not None

    for _ in racing(endpoint_data, other, 1):
        resp = call_api("PATCH", f"/v1/endpoints/{ep}", key=app_key, body={"url": "http://127.0.0.1:9/b"})
    assert resp.status == 200, resp.body
    got = call_api("GET", f"/v1/endpoints/{ep}", key=app_key).body
    assert (got["url"], got["description"]) == ("http://127.0.0.1:9/b", "second")


def test_an_endpoint_edit_that_keeps_losing_the_race_is_a_409_and_stores_nothing(
    app: tuple[str, str],
) -> None:
    app_id, app_key = app
    ep = endpoint(app_key)
    n = [0]

    def other() -> None:
        n[0] += 1
        stored = endpoint_data.get(app_id, ep, consistent=True)
        assert stored is not None
        assert endpoint_data.save(replace(stored, description=f"edit {n[0]}")) is not None

    for _ in racing(endpoint_data, other, 100):
        resp = call_api("PATCH", f"/v1/endpoints/{ep}", key=app_key, body={"url": "http://127.0.0.1:9/b"})
    assert resp.status == 409, resp.body
    assert resp.body["error"]["code"] == "CONCURRENT_UPDATE" and resp.body["error"]["field"] == "id", (
        resp.body
    )
    assert "endpoint is changing concurrently" in resp.body["error"]["message"]
    got = call_api("GET", f"/v1/endpoints/{ep}", key=app_key).body
    assert got["url"] == "http://127.0.0.1:9/a" and got["description"] == f"edit {n[0]}"


def test_a_retry_policy_edit_racing_another_keeps_both_changes(app: tuple[str, str]) -> None:
    app_id, app_key = app
    created = call_api(
        "POST",
        "/v1/retry-policies",
        key=app_key,
        body={"strategy": "fixed", "max_attempts": 5, "base_delay_sec": 1, "max_delay_sec": 5},
    )
    assert created.status == 201, created.body
    policy_id = str(created.body["id"])

    def other() -> None:
        stored = policy_data.get(app_id, policy_id, consistent=True)
        assert stored is not None
        assert policy_data.save(replace(stored, max_attempts=7)) is not None

    for _ in racing(policy_data, other, 1):
        resp = call_api("PATCH", f"/v1/retry-policies/{policy_id}", key=app_key, body={"base_delay_sec": 2})
    assert resp.status == 200, resp.body
    got = call_api("GET", f"/v1/retry-policies/{policy_id}", key=app_key).body
    assert (got["base_delay_sec"], got["max_attempts"]) == (2, 7), got
