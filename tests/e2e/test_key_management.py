"""Key management end to end, against the local stack: an operator creates, lists, rotates and
revokes an App's API keys with `edgecron apps keys` and the Python client; a revoked key, and a
rotated one past its grace period, are refused by the very next request."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from edgecron_client import ApiError, EdgeCron
from edgecron_testing.local_stack import LocalStackProcess
from tests.e2e.test_cli import Cli

pytestmark = pytest.mark.e2e


def refused(api: EdgeCron) -> bool:
    try:
        api.endpoints.list()
    except ApiError as exc:
        assert exc.status == 401, exc
        return True
    return False


def test_keys_are_created_listed_rotated_and_revoked(local_stack: LocalStackProcess, tmp_path: Path) -> None:
    url = local_stack.api_url
    admin_cli = Cli(tmp_path, url, admin_key=local_stack.admin_key)
    admin = EdgeCron(url, local_stack.admin_key)
    app = admin_cli.json("apps", "create", f"keys-e2e-{uuid.uuid4().hex[:8]}")
    app_id, first = app["app"]["id"], app["api_key"]
    assert app_id in {a["id"] for a in admin.apps.iter()}

    # A second key, from the CLI: shown once, then listed by prefix only.
    created = admin_cli.json("apps", "keys", "create", app_id, "--name", "billing")
    second = created["api_key"]
    assert not refused(EdgeCron(url, second))
    listed = admin_cli.json("apps", "keys", "list", app_id, "--all")["data"]
    assert {k["prefix"] for k in listed} == {first[:7], second[:7]}
    assert second not in str(listed) and first not in str(listed)
    by_prefix = {k["prefix"]: k for k in listed}
    assert by_prefix[second[:7]]["last_used_at"] is not None and by_prefix[second[:7]]["name"] == "billing"

    # Rotation with a grace period: both keys work; with none, the old key is refused at once.
    rotated = admin.apps.keys.rotate(app_id, by_prefix[first[:7]]["id"], grace_period_sec=3600)
    third = rotated["api_key"]
    assert rotated["previous"] is not None and rotated["previous"]["state"] == "expiring"
    assert not refused(EdgeCron(url, first)) and not refused(EdgeCron(url, third))
    now_out = admin_cli.run("apps", "keys", "rotate", app_id, rotated["key"]["id"], "--grace-period", "0")
    assert now_out.returncode == 0, now_out.stderr
    assert refused(EdgeCron(url, third))

    # A leaked key is revoked: the next request with it is a 401, the App's other keys still work.
    revoked = admin.apps.keys.revoke(app_id, by_prefix[second[:7]]["id"])
    assert revoked["prefix"] == second[:7]
    assert refused(EdgeCron(url, second))
    assert not refused(EdgeCron(url, first))  # still inside its grace period
    again = admin_cli.run("apps", "keys", "revoke", app_id, by_prefix[second[:7]]["id"])
    assert again.returncode == 3, again.stderr

    kinds = [n["kind"] for n in EdgeCron(url, first).notifications.iter()]
    assert kinds == ["API_KEY_REVOKED", "API_KEY_ROTATED", "API_KEY_ROTATED", "API_KEY_CREATED"]
