"""No API key, admin key or signing secret ever reaches the logs: a full story on a stack with
--verbose (INFO logs, access lines, metrics), then every secret is searched for in its output."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests

from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver, Reply

BANNER_END = "(saved in "  # the start banner prints the local keys on purpose; the rest must not


@pytest.fixture(scope="module")
def verbose_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStackProcess]:
    stack = LocalStackProcess(tmp_path_factory.mktemp("verbose-stack"), "2", extra_args=("--verbose",))
    stack.start()
    yield stack
    assert stack.stop() == 0


def test_no_secret_or_key_in_the_logs_of_a_full_story(verbose_stack: LocalStackProcess) -> None:
    receiver = Receiver()
    receiver.script("/fail", Reply(500))
    try:
        admin = requests.Session()
        admin.headers["authorization"] = f"Bearer {verbose_stack.admin_key}"
        created = admin.post(f"{verbose_stack.api_url}/v1/apps", json={"name": "logs"}, timeout=30).json()
        api = Api(verbose_stack.api_url, created["api_key"])
        policy = api.ok(
            "POST", "/v1/retry-policies", {"max_attempts": 2, "base_delay_sec": 1, "max_delay_sec": 1}
        )
        ok = api.ok(
            "POST",
            "/v1/endpoints",
            {
                "url": receiver.url("/ok"),
                "filter_events": ["*"],
                "headers": {"X-Token": "header-value-not-secret"},
            },
        )
        bad = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/fail"), "retry_policy_id": policy["id"]})
        rotated = api.ok("POST", f"/v1/endpoints/{ok['id']}/rotate-secret")
        api.wait_run(
            api.ok("POST", "/v1/task-runs", {"endpoint_id": ok["id"], "payload": {"a": 1}})["id"], terminal
        )
        dead = api.wait_run(api.ok("POST", "/v1/task-runs", {"endpoint_id": bad["id"]})["id"], terminal)
        assert dead["status"] == "dead_letter"
        api.ok("POST", f"/v1/dead-letters/{dead['id']}/replay")
        api.ok("POST", "/v1/events", {"name": "invoice.paid", "payload": {"n": 1}})
        api.ok("POST", "/v1/schedules", {"cron": "*/5 * * * * *", "endpoint_ids": [ok["id"]]})
        api.ok("GET", "/v1/endpoints")
        requests.get(
            f"{verbose_stack.api_url}/v1/endpoints", headers={"authorization": "Bearer ek_wrong"}, timeout=30
        )
        time.sleep(3)
        assert len(receiver.received("/ok")) >= 2
    finally:
        receiver.close()
    output = verbose_stack.output()
    after_banner = output[output.find(BANNER_END) :]
    assert "INFO" in after_banner or '"level"' in after_banner  # the handlers' logs are in there
    secrets = {
        "admin key": verbose_stack.admin_key,
        "default app key": verbose_stack.api_key,
        "new app key": created["api_key"],
        "endpoint secret": ok["secret"],
        "rotated secret": rotated["secret"],
        "other endpoint secret": bad["secret"],
    }
    for name, value in secrets.items():
        assert value not in after_banner, f"the {name} appears in the logs"
        if value.startswith("whsec_"):
            assert value.removeprefix("whsec_") not in output, f"the {name} (base64 part) appears in the logs"
    assert "whsec_" not in after_banner
    assert "ek_wrong" not in after_banner  # not even a wrong key is echoed
