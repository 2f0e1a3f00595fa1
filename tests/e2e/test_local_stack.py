"""`edgecron local` end to end: provisioned from the template, serving the API, surviving a restart."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

import boto3
import pytest
import requests

from edgecron_cli.local.provision import DEFAULT_PREFIX
from edgecron_cli.local.template import load_template
from edgecron_testing.local_stack import process_gone

if TYPE_CHECKING:
    from edgecron_testing.local_stack import LocalStackProcess

pytestmark = pytest.mark.e2e


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _client(stack: LocalStackProcess, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=stack.aws_endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _create_endpoint(stack: LocalStackProcess, key: str, url: str) -> dict[str, Any]:
    response = requests.post(
        f"{stack.api_url}/v1/endpoints", json={"url": url}, headers=_auth(key), timeout=30
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    assert body["id"]
    return body


def test_local_json_describes_the_running_stack(local_stack: LocalStackProcess) -> None:
    local = json.loads((local_stack.state_dir / "local.json").read_text())
    assert set(local) == {"api_url", "api_key", "admin_key", "aws_endpoint_url", "app_id"}
    assert local["api_url"] == f"http://127.0.0.1:{local_stack.port}"
    assert local["aws_endpoint_url"] == f"http://127.0.0.1:{local_stack.aws_port}"
    assert local["api_key"].startswith("ek_")
    assert f"EdgeCron local stack ready on {local['api_url']}" in local_stack.output()


def test_every_table_and_queue_of_the_template_is_provisioned(local_stack: LocalStackProcess) -> None:
    template = load_template(local_stack.root / "template.yaml")
    tables = set(_client(local_stack, "dynamodb").list_tables()["TableNames"])
    assert {DEFAULT_PREFIX + logical_id for logical_id in template.tables} <= tables
    queue_urls = _client(local_stack, "sqs").list_queues()["QueueUrls"]
    queues = {url.rsplit("/", 1)[1] for url in queue_urls}
    assert {DEFAULT_PREFIX + logical_id for logical_id in template.queues} <= queues


def test_the_api_needs_an_app_key(local_stack: LocalStackProcess) -> None:
    url = f"{local_stack.api_url}/v1/endpoints"
    assert requests.get(url, headers=_auth(local_stack.api_key), timeout=30).status_code == 200
    assert requests.get(url, timeout=30).status_code == 401
    assert requests.get(url, headers=_auth("ek_not-a-key"), timeout=30).status_code == 401


def test_compensation_answered_success(local_stack: LocalStackProcess) -> None:
    template = load_template(local_stack.root / "template.yaml")
    assert template.custom_resources, "the template has no custom resource backed by a function"
    output = local_stack.output()
    for logical_id, resource in template.custom_resources.items():
        assert f"custom resource {logical_id} ({resource.type}) Create: SUCCESS" in output, output


def test_concurrent_requests_of_two_apps_never_mix(local_stack: LocalStackProcess) -> None:
    """Several API containers share one process; each request must see only its own App's data."""
    created = requests.post(
        f"{local_stack.api_url}/v1/apps",
        json={"name": "e2e-other"},
        headers=_auth(local_stack.admin_key),
        timeout=30,
    )
    assert created.status_code == 201, created.text
    other_key = created.json()["api_key"]
    mine = _create_endpoint(local_stack, local_stack.api_key, "http://127.0.0.1:9/mine")["id"]
    theirs = _create_endpoint(local_stack, other_key, "http://127.0.0.1:9/theirs")["id"]
    mixed: list[str] = []

    def list_endpoints(key: str, own: str, foreign: str) -> None:
        with requests.Session() as session:
            for _ in range(15):
                response = session.get(f"{local_stack.api_url}/v1/endpoints", headers=_auth(key), timeout=30)
                ids = {endpoint["id"] for endpoint in response.json()["data"]}
                if response.status_code != 200 or own not in ids or foreign in ids:
                    mixed.append(f"{response.status_code} {ids}")

    threads = [
        threading.Thread(target=list_endpoints, args=args)
        for args in [(local_stack.api_key, mine, theirs), (other_key, theirs, mine)] * 4
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert mixed == []


def test_a_restart_keeps_the_app_its_endpoints_and_the_admin_key(local_stack: LocalStackProcess) -> None:
    endpoint = _create_endpoint(local_stack, local_stack.api_key, "http://127.0.0.1:9/hook")
    api_key, admin_key, app_id = local_stack.api_key, local_stack.admin_key, local_stack.app_id
    mark = local_stack.mark()

    local_stack.restart()

    assert (local_stack.api_key, local_stack.admin_key, local_stack.app_id) == (api_key, admin_key, app_id)
    response = requests.get(
        f"{local_stack.api_url}/v1/endpoints/{endpoint['id']}", headers=_auth(api_key), timeout=30
    )
    assert response.status_code == 200, response.text
    assert response.json()["url"] == "http://127.0.0.1:9/hook"
    after = local_stack.output(since=mark)
    assert "saving " in after and "restored " in after
    assert "Update: SUCCESS" in after


def test_every_acknowledged_write_survives_a_kill(throwaway_stack: LocalStackProcess) -> None:
    """`kill -9` right after a burst of 201s: after a start on the same state dir, every object the
    API acknowledged is there, as the API answered it."""
    stack = throwaway_stack
    headers = _auth(stack.api_key)
    endpoint = _create_endpoint(stack, stack.api_key, "http://127.0.0.1:9/hook")
    made: dict[str, dict[str, Any]] = {f"/v1/endpoints/{endpoint['id']}": endpoint}
    for i in range(20):
        body = {"endpoint_id": endpoint["id"], "payload": {"n": i}, "delay_sec": 3600}
        response = requests.post(f"{stack.api_url}/v1/task-runs", json=body, headers=headers, timeout=30)
        assert response.status_code == 201, response.text
        made[f"/v1/task-runs/{response.json()['id']}"] = response.json()
    for path, body in [
        ("/v1/schedules", {"cron": "0 0 1 1 *", "endpoint_ids": [endpoint["id"]]}),
        ("/v1/retry-policies", {"max_attempts": 4}),
        ("/v1/endpoints", {"url": "http://127.0.0.1:9/other"}),
    ]:
        response = requests.post(f"{stack.api_url}{path}", json=body, headers=headers, timeout=30)
        assert response.status_code == 201, response.text
        made[f"{path}/{response.json()['id']}"] = response.json()
    moto = stack.child("edgecron_cli.local.moto_process")

    stack.kill()
    assert process_gone(moto, within=10)
    stack.start()

    for path, acknowledged in made.items():
        response = requests.get(f"{stack.api_url}{path}", headers=headers, timeout=30)
        assert response.status_code == 200, (path, response.text)
        assert response.json()["id"] == acknowledged["id"]
    runs = [made[path] for path in made if path.startswith("/v1/task-runs/")]
    for run in runs:
        got = requests.get(f"{stack.api_url}/v1/task-runs/{run['id']}", headers=headers, timeout=30).json()
        assert (got["status"], got["payload"]) == ("pending", run["payload"])


def test_an_app_over_its_rate_is_refused_under_load_and_the_others_are_not(
    local_stack: LocalStackProcess,
) -> None:
    """Many concurrent clients of three Apps, one of them over the rate the operator gave it: that
    App gets 429 with Retry-After, the others only 200s, and nobody a 5xx."""
    admin = _auth(local_stack.admin_key)
    keys = {}
    for name in ("flood", "calm-1", "calm-2"):
        created = requests.post(
            f"{local_stack.api_url}/v1/apps", json={"name": name}, headers=admin, timeout=30
        )
        assert created.status_code == 201, created.text
        keys[name] = (created.json()["app"]["id"], created.json()["api_key"])
    rate = requests.put(
        f"{local_stack.api_url}/v1/apps/{keys['flood'][0]}/rate-limit",
        json={"requests_per_sec": 5},
        headers=admin,
        timeout=30,
    )
    assert rate.status_code == 200, rate.text
    seen: dict[str, list[tuple[int, str | None]]] = {name: [] for name in keys}
    lock = threading.Lock()

    def client(name: str, count: int) -> None:
        with requests.Session() as session:
            for _ in range(count):
                r = session.get(
                    f"{local_stack.api_url}/v1/endpoints", headers=_auth(keys[name][1]), timeout=30
                )
                with lock:
                    seen[name].append((r.status_code, r.headers.get("Retry-After")))

    threads = [threading.Thread(target=client, args=("flood", 15)) for _ in range(4)]
    threads += [
        threading.Thread(target=client, args=(name, 10)) for name in ("calm-1", "calm-2") for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    flood = [status for status, _ in seen["flood"]]
    assert set(flood) <= {200, 429} and flood.count(429) > 0, flood
    assert all(after == "1" for status, after in seen["flood"] if status == 429)
    assert [status for status, _ in seen["calm-1"] + seen["calm-2"]] == [200] * 40
