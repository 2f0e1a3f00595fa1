"""`edgecron mcp` driven by the `mcp` package's own client against the local stack, as an agent would:
over stdio with the command as a process, and in-process for the longer story (create a schedule with
its retry and missed policy, inspect it, watch it deliver, pause and resume it, list its fires and
runs, send a run, replay a dead letter). The server acts for the one App whose key it was given."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from edgecron_cli.mcp_server import build_server
from edgecron_client import EdgeCron
from edgecron_testing.local_stack import ROOT, LocalStackProcess
from edgecron_testing.receiver import Receiver, Reply

pytestmark = pytest.mark.e2e

WAIT_SEC = 45.0
TOOLS = {
    "list_endpoints",
    "create_retry_policy",
    "create_schedule",
    "get_schedule",
    "list_schedules",
    "pause_schedule",
    "resume_schedule",
    "list_fires",
    "send_run",
    "list_runs",
    "get_run",
    "list_dead_letters",
    "replay_dead_letter",
    "replay_dead_letters",
}


def _fresh_app(stack: LocalStackProcess, name: str) -> str:
    created = EdgeCron(stack.api_url, stack.admin_key).apps.create(name)
    return created["api_key"]


async def _call(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content)
    return (
        result.structured_content
        if result.structured_content is not None
        else json.loads(result.content[0].text)
    )  # type: ignore[union-attr]


async def _until(what: str, probe: Callable[[], Awaitable[Any]]) -> Any:
    deadline = time.monotonic() + WAIT_SEC
    while True:
        value = await probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT_SEC:.0f} s"
        await anyio.sleep(0.3)


def test_the_command_serves_the_tools_over_stdio_for_its_app_only(
    local_stack: LocalStackProcess, tmp_path: Path
) -> None:
    key = _fresh_app(local_stack, "mcp-stdio")
    mine = EdgeCron(local_stack.api_url, key).endpoints.create({"url": "http://127.0.0.1:9/mine"})
    EdgeCron(local_stack.api_url, local_stack.api_key).endpoints.create({"url": "http://127.0.0.1:9/theirs"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGECRON_")}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "core"), str(ROOT / "cli")]),
            "EDGECRON_URL": local_stack.api_url,
            "EDGECRON_API_KEY": key,
        }
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "edgecron_cli.main", "mcp"], env=env, cwd=str(tmp_path)
    )

    async def story() -> None:
        async with Client(params) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == TOOLS
            listed = await _call(client, "list_endpoints")
            assert [e["id"] for e in listed["data"]] == [mine["id"]]  # the other App's is not there
            missing = await client.call_tool("get_schedule", {"schedule_id": "sch_missing"})
            assert missing.is_error
            assert "NOT_FOUND" in missing.content[0].text  # type: ignore[union-attr]

    anyio.run(story)


def test_an_agent_runs_a_schedule_and_its_deliveries_through_the_tools(
    local_stack: LocalStackProcess,
) -> None:
    key = _fresh_app(local_stack, "mcp-story")
    api = EdgeCron(local_stack.api_url, key)
    receiver = Receiver()
    receiver.script("/bad", Reply(503))  # the last reply repeats
    try:
        good = api.endpoints.create({"url": receiver.url("/good")})
        bad = api.endpoints.create({"url": receiver.url("/bad")})

        async def story() -> None:
            async with Client(build_server(api)) as client:
                policy = await _call(client, "create_retry_policy", max_attempts=1, base_delay_sec=1)
                api.endpoints.update(
                    bad["id"], {"retry_policy_id": policy["id"]}
                )  # one try, then a dead letter
                schedule = await _call(
                    client,
                    "create_schedule",
                    endpoint_ids=[good["id"]],
                    cron="*/2 * * * * *",
                    payload={"report": "daily"},
                    missed_policy="SKIP",
                    retry_policy_id=policy["id"],
                )
                assert schedule["endpoint_ids"] == [good["id"]]
                assert schedule["missed_policy"] == "SKIP" and schedule["retry_policy_id"] == policy["id"]
                shown = await _call(client, "get_schedule", schedule_id=schedule["id"], preview=3)
                assert shown["status"] == "ACTIVE" and len(shown["preview"]) == 3

                async def delivered() -> Any:
                    return receiver.received("/good")

                first = (await _until("a scheduled delivery", delivered))[0]
                assert json.loads(first.body) == {"report": "daily"}

                async def its_fire() -> Any:  # the delivered run, in the fire that made it
                    fires = (await _call(client, "list_fires", schedule_id=schedule["id"], limit=50))["data"]
                    runs = {r["id"]: r for f in fires for r in f["runs"]}
                    return runs.get(first.headers["webhook-id"], {}).get("status") == "success"

                await _until("the delivered run in the schedule's fires", its_fire)
                paused = await _call(client, "pause_schedule", schedule_id=schedule["id"], reason="agent")
                assert paused["status"] == "PAUSED"
                resumed = await _call(client, "resume_schedule", schedule_id=schedule["id"])
                assert resumed["status"] == "ACTIVE"
                await _call(client, "pause_schedule", schedule_id=schedule["id"])

                runs = await _call(client, "list_runs", source="schedule", endpoint_id=good["id"])
                assert runs["data"] and all(r["endpoint_id"] == good["id"] for r in runs["data"])

                sent = await _call(
                    client, "send_run", endpoint_id=bad["id"], payload={"n": 1}, idempotency_key="k1"
                )
                again = await _call(
                    client, "send_run", endpoint_id=bad["id"], payload={"n": 1}, idempotency_key="k1"
                )
                assert again["id"] == sent["id"]

                async def dead() -> Any:
                    return (await _call(client, "get_run", run_id=sent["id"]))["status"] == "dead_letter"

                await _until("the dead letter", dead)
                letters = await _call(client, "list_dead_letters", endpoint_id=bad["id"])
                assert [r["id"] for r in letters["data"]] == [sent["id"]]
                run = await _call(client, "get_run", run_id=sent["id"])
                assert run["attempts"] and run["attempts"][0]["status_code"] == 503
                receiver.script("/bad", Reply(200))
                await _call(client, "replay_dead_letter", run_id=sent["id"])

                async def replayed() -> Any:
                    return (await _call(client, "get_run", run_id=sent["id"]))["status"] == "success"

                await _until("the replayed delivery", replayed)

        anyio.run(story)
    finally:
        receiver.close()
