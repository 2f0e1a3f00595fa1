"""The schedule contract in real time against the local stack (docs/time-rules.md, What a schedule
promises): a pause and a resume near fire times, and a Ctrl-C restart of the stack. Deliveries are
read from a real receiver by their `edgecron-fire-time` header; each action's moment is taken from
the client's side, before the request and after its answer."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from edgecron_testing.api import Api
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver

EVERY = 2  # seconds between fires


def fire_times(receiver: Receiver, path: str, schedule_id: str) -> list[float]:
    """The nominal fire times the receiver was called for (epoch seconds), in order of arrival."""
    return [
        datetime.fromisoformat(r.headers["edgecron-fire-time"].replace("Z", "+00:00")).timestamp()
        for r in list(receiver.requests)
        if r.path == path and r.headers.get("edgecron-schedule-id") == schedule_id
    ]


def grid(after: float, before: float) -> list[float]:
    """The every-EVERY-seconds fire times strictly between two moments."""
    first = int(after) + 1
    return [float(t) for t in range(first, int(before) + 1) if t % EVERY == 0 and after < t < before]


def wait_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.time()))


def setup(stack: LocalStackProcess, receiver: Receiver, path: str) -> tuple[Api, str, float]:
    api = Api(stack.api_url, stack.api_key)
    endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url(path)})["id"]
    created = api.ok("POST", "/v1/schedules", {"cron": f"*/{EVERY} * * * * *", "endpoint_ids": [endpoint]})
    return api, created["id"], time.time()


def test_a_pause_and_a_resume_near_fire_times_keep_the_contract(
    local_stack: LocalStackProcess, receiver: Receiver
) -> None:
    api, schedule_id, created = setup(local_stack, receiver, "/contract-pause")
    next_fire = (int(time.time()) // EVERY + 3) * EVERY
    wait_until(next_fire - 0.3)  # 0.3 s before a fire dispatched ahead
    pause_sent = time.time()
    assert api.ok("POST", f"/v1/schedules/{schedule_id}/pause")["next_fire_time"] is None
    pause_returned = time.time()
    wait_until(next_fire + 1.5)
    resume_sent = time.time()
    resumed = api.ok("POST", f"/v1/schedules/{schedule_id}/resume")
    resume_returned = time.time()
    assert resumed["next_fire_time"] is not None
    nxt = datetime.fromisoformat(resumed["next_fire_time"].replace("Z", "+00:00")).timestamp()
    assert resume_sent < nxt <= resume_returned + EVERY
    wait_until(resume_returned + 8)
    api.ok("POST", f"/v1/schedules/{schedule_id}/pause")
    stopped = time.time()
    time.sleep(2)

    got = fire_times(receiver, "/contract-pause", schedule_id)
    assert len(got) == len(set(got)), f"a fire was delivered twice: {sorted(got)}"
    delivered = set(got)
    assert not delivered & set(grid(pause_returned, resume_sent)), (pause_returned, resume_sent, sorted(got))
    assert set(grid(created, pause_sent - 1)) <= delivered, (created, pause_sent, sorted(got))
    assert set(grid(resume_returned, stopped - 1)) <= delivered, (resume_returned, stopped, sorted(got))
    fires = api.ok("GET", f"/v1/schedules/{schedule_id}/fires", limit=50)["data"]
    for fire in fires:
        assert fire["duration_ms"] is None or fire["duration_ms"] >= 0, fire
        if fire["status"] == "CANCELLED":
            assert fire["started_at"] is None, fire


def test_a_restart_of_the_stack_leaves_no_fire_owed_and_unsent(
    throwaway_stack: LocalStackProcess, receiver: Receiver
) -> None:
    """The stack stopped with Ctrl-C a few seconds after fires were dispatched ahead: after the
    restart every fire dispatched before is delivered or recorded, and the schedule goes on."""
    api, schedule_id, created = setup(throwaway_stack, receiver, "/contract-restart")
    time.sleep(6)
    assert throwaway_stack.stop() == 0
    stopped = time.time()
    time.sleep(3)
    throwaway_stack.start()
    started = time.time()
    api = Api(throwaway_stack.api_url, throwaway_stack.api_key)
    checked = started + 12
    after_restart = set(grid(started + 1, checked - 2))
    deadline = time.time() + 60  # a loaded machine delivers late, never not at all
    while not after_restart <= set(fire_times(receiver, "/contract-restart", schedule_id)):
        if time.time() > deadline:
            break
        time.sleep(0.5)
    checked = max(checked, time.time())

    got = fire_times(receiver, "/contract-restart", schedule_id)
    assert len(got) == len(set(got)), f"a fire was delivered twice: {sorted(got)}"
    assert after_restart <= set(got), (started, checked, sorted(got))
    # before the restart: delivered, or (its run had not gone out when the stack stopped, or its
    # time fell while it was down) recorded by the missed-fire policy; never left owed and unsent
    fires = api.ok("GET", f"/v1/schedules/{schedule_id}/fires", limit=50)["data"]
    missed = {
        datetime.fromisoformat(f["fire_time"].replace("Z", "+00:00")).timestamp()
        for f in fires
        if f["status"] == "MISSED"
    }
    unaccounted = set(grid(created, started + 1)) - set(got) - missed
    assert unaccounted == set(), (created, stopped, started, sorted(got), sorted(missed))
    stuck = [
        f
        for f in fires
        if f["status"] in ("SCHEDULED", "RUNNING")
        and datetime.fromisoformat(f["fire_time"].replace("Z", "+00:00"))
        < datetime.fromtimestamp(checked - 5, UTC)
    ]
    assert stuck == [], stuck
