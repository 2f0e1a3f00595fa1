"""The deploy-time catch-up (a CloudFormation custom resource runs it on every deploy): the same
code path as the scan, so missed fires are handled the same way whoever notices them first. It also
walks, once per stack and resumed by each deploy until done, the Events an earlier release left
with a pending fan-out and no wake time, so the scan re-drives them (services/events.py)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import urllib3

from edgecron import clock
from edgecron.observability import logger
from edgecron.services import events
from edgecron.services.fires import due_walk
from edgecron.services.scan import ScanReport, dispatch_runs

ANSWER_MARGIN_SEC = 20  # stop working this long before the Lambda timeout, so CloudFormation is answered


@dataclass(frozen=True)
class CfnAnswer:
    status: str  # SUCCESS | FAILED
    reason: str
    data: dict[str, Any]


def catch_up(remaining_ms: int) -> dict[str, Any]:
    deadline = time.monotonic() + max(1.0, remaining_ms / 1000 - ANSWER_MARGIN_SEC)
    now = clock.now()
    schedules = due_walk.dispatch_schedules(now, deadline=deadline)
    runs = ScanReport()
    dispatch_runs(now, runs)
    return {
        **schedules.__dict__,
        "runs_enqueued": runs.runs_enqueued,
        "claims_released": runs.claims_released,
        **events.wake_unwoken(clock.to_ms(now), deadline),
    }


def handle(event: dict[str, Any], remaining_ms: int) -> CfnAnswer:
    """Create and Update run the catch-up; Delete does nothing. Never raises."""
    request_type = event.get("RequestType")
    if request_type == "Delete":
        return CfnAnswer("SUCCESS", "nothing to do on delete", {})
    try:
        report = catch_up(remaining_ms)
    except Exception as exc:
        logger.exception("deploy catch-up failed")
        return CfnAnswer("FAILED", f"catch-up failed: {type(exc).__name__}: {str(exc)[:200]}", {})
    logger.info("deploy catch-up done", extra={"report": report})
    return CfnAnswer("SUCCESS", "catch-up done", {k: str(v) for k, v in report.items()})


def respond(event: dict[str, Any], answer: CfnAnswer, physical_id: str) -> bool:
    """PUT the answer to the pre-signed ResponseURL (a few tries); False if it could not be sent.
    Through urllib3, which botocore is built on and every function has loaded, not the deliveries'
    HTTP client (requests), which would add about 20 ms to the cold start for one request per deploy."""
    body = json.dumps(
        {
            "Status": answer.status,
            "Reason": answer.reason,
            "PhysicalResourceId": physical_id,
            "StackId": event.get("StackId"),
            "RequestId": event.get("RequestId"),
            "LogicalResourceId": event.get("LogicalResourceId"),
            "NoEcho": False,
            "Data": answer.data,
        }
    )
    for attempt in range(3):
        try:
            resp = urllib3.request(
                "PUT",
                event["ResponseURL"],
                body=body,
                headers={"content-type": ""},
                timeout=10,
                retries=False,
            )
            if resp.status < 300:
                return True
            logger.error("CloudFormation response refused", extra={"status": resp.status})
        except urllib3.exceptions.HTTPError:
            logger.exception("CloudFormation response failed", extra={"attempt": attempt + 1})
        time.sleep(0.5 * (attempt + 1))
    return False
