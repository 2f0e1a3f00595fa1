"""The optional monthly quota of an App: billable triggers (schedule fires, Event publishes, direct
Task Runs) per calendar month (UTC). No quota set = unlimited.

The check reads the App and its usage counters before the trigger is recorded, so it is a soft
limit: requests racing each other at the limit may each pass the check and overshoot it by the
number of concurrent requests. Every direct run of an App with a quota is counted by the
transaction that stores it, so the counter holds it once it is acknowledged (an App without a quota
has its runs counted by the scan's check of recent runs, minutes later: no quota reads them). Those
runs wait on the App's check mark until a quota is set, which moves them to the counter; so the
counter the check reads holds every run but the ones created in the few minutes before the quota
applied, whose check comes after (GET /v1/usage shows them). The App's
quota itself is remembered by each container for a few seconds (data/apps.py), so a new quota
applies within them."""

from __future__ import annotations

from edgecron.data import apps
from edgecron.errors import QuotaExceeded
from edgecron.services import usage


def _quota_and_used(app_id: str, now_ms: int) -> tuple[int, int] | None:
    app = apps.app_for_quota(app_id)
    if app is None or app.monthly_quota is None:
        return None
    return int(app.monthly_quota), usage.usage_of(app_id, usage.month_of(now_ms), held=False)["total"]


def remaining(app_id: str, now_ms: int) -> int | None:
    """Triggers left this month (0 when used up), or None when the App has no quota."""
    state = _quota_and_used(app_id, now_ms)
    return None if state is None else max(0, state[0] - state[1])


def has_quota(app_id: str) -> bool:
    """Whether the App has a quota (as remembered by this container)."""
    app = apps.app_for_quota(app_id)
    return app is not None and app.monthly_quota is not None


def over_quota(app_id: str, now_ms: int) -> bool:
    """For the schedule path: a fire over quota becomes a FAILED fire instead of raising."""
    return remaining(app_id, now_ms) == 0


def check_quota(app_id: str, now_ms: int) -> None:
    """Raise QuotaExceeded (429 QUOTA_EXCEEDED) when the App's quota for this month is used up.
    Call it before storing anything."""
    state = _quota_and_used(app_id, now_ms)
    if state is not None and state[1] >= state[0]:
        raise QuotaExceeded(
            f"the monthly quota of {state[0]} billable triggers is used up for {usage.month_of(now_ms)}"
        )
