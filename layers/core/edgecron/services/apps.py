"""App use cases: create (admin), the monthly quota, usage and notifications."""

from __future__ import annotations

from typing import Any

from edgecron.config import get_settings
from edgecron.data import apps as data
from edgecron.data import notifications as notification_data
from edgecron.data import run_checks
from edgecron.data.paging import Page
from edgecron.domain.apps import App
from edgecron.domain.notifications import Notification
from edgecron.errors import NotFound
from edgecron.services import usage


def app_for_key(key: str) -> str | None:
    """The App an API key belongs to, or None."""
    return data.app_for_key(key)


def is_admin_key(key: str) -> bool:
    return data.is_admin_key(key, get_settings().admin_key_secret_arn)


def create(name: str, now_ms: int, monthly_quota: int | None) -> tuple[App, str]:
    """A new App and its first API key, shown once."""
    return data.create_app(name, now_ms, monthly_quota)


def apps_page(limit: int, cursor: dict[str, Any] | None) -> Page[App]:
    """Every App, a page at a time (the operator's listing)."""
    return data.apps_page(limit, cursor)


def set_quota(app_id: str, monthly_quota: int | None) -> App:
    """Set or clear the quota. A quota reads the month's counter alone: the runs the scan's check
    counted on the App's mark go to the counter first."""
    app = data.set_quota(app_id, monthly_quota)
    if app is None:
        raise NotFound(f"app {app_id} not found", "app_id")
    if monthly_quota is not None:
        run_checks.move_counted(app_id)
    return app


def set_rate_limit(app_id: str, requests_per_sec: int | None) -> App:
    """Set the App's request rate, or clear it (None)."""
    app = data.set_rate_limit(app_id, requests_per_sec)
    if app is None:
        raise NotFound(f"app {app_id} not found", "app_id")
    return app


def usage_of(app_id: str, month: str | None, now_ms: int) -> tuple[str, dict[str, int], int | None]:
    """(month, counts by kind and total, the App's monthly quota) for `month`, default this one."""
    month = month or usage.month_of(now_ms)
    app = data.get_app(app_id)
    quota = app.monthly_quota if app else None
    return month, usage.usage_of(app_id, month), quota


def notifications_page(
    app_id: str, limit: int, cursor: dict[str, Any] | None, now_ms: int
) -> Page[Notification]:
    return notification_data.list_page(app_id, limit, cursor, now_ms)
