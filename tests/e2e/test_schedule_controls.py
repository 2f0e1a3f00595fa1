"""Schedule controls end to end on the local stack: a trigger delivers one signed request now without
moving the schedule, and a pause keeps its reason until the schedule is resumed."""

from __future__ import annotations

from standardwebhooks.webhooks import Webhook

from edgecron_testing.api import Api, terminal
from edgecron_testing.local_stack import LocalStackProcess
from edgecron_testing.receiver import Receiver


def test_trigger_delivers_now_and_pause_keeps_its_reason(local_stack: LocalStackProcess) -> None:
    api = Api(local_stack.api_url, local_stack.api_key)
    receiver = Receiver()
    try:
        ep = api.ok("POST", "/v1/endpoints", {"url": receiver.url("/now")})
        schedule = api.ok(
            "POST", "/v1/schedules", {"cron": "0 3 1 1 *", "endpoint_ids": [ep["id"]], "payload": {"n": 1}}
        )
        fire = api.ok("POST", f"/v1/schedules/{schedule['id']}/trigger")
        assert fire["manual"] is True and not fire["fire_time"].endswith(".000Z")
        run = api.wait_run(fire["runs"][0]["id"], terminal)
        assert run["status"] == "success"
        got = receiver.wait_for("/now", 1)
        Webhook(ep["secret"]).verify(got[0].body, got[0].headers)
        after = api.ok("GET", f"/v1/schedules/{schedule['id']}")
        assert after["next_fire_time"] == schedule["next_fire_time"]
        fires = api.all_pages(f"/v1/schedules/{schedule['id']}/fires")
        assert [(f["fire_time"], f["manual"]) for f in fires] == [(fire["fire_time"], True)]

        paused = api.ok("POST", f"/v1/schedules/{schedule['id']}/pause", {"reason": "quarter close"})
        assert paused["status"] == "PAUSED" and paused["pause_reason"] == "quarter close"
        refused = api.call("POST", f"/v1/schedules/{schedule['id']}/trigger")
        assert refused.status_code == 409 and refused.json()["error"]["field"] == "id"
        too_long = api.call("POST", f"/v1/schedules/{schedule['id']}/pause", {"reason": "x" * 501})
        assert too_long.status_code == 400 and too_long.json()["error"]["field"]
        assert api.ok("GET", f"/v1/schedules/{schedule['id']}")["pause_reason"] == "quarter close"
        resumed = api.ok("POST", f"/v1/schedules/{schedule['id']}/resume")
        assert resumed["status"] == "ACTIVE" and resumed["pause_reason"] is None
    finally:
        receiver.close()
