"""Entity → response model: what a key may do, an App's usage and its notifications."""

from __future__ import annotations

from collections.abc import Mapping

from edgecron.clock import iso_ms
from edgecron.domain.notifications import Notification
from edgecron.domain.vocabulary import KeyRole
from edgecron.schemas.apps import AccountOut
from edgecron.schemas.schedules import NotificationOut, UsageOut


def account_out(role: KeyRole, app_id: str | None) -> AccountOut:
    return AccountOut(role=role, app_id=app_id)


def notification_out(n: Notification) -> NotificationOut:
    return NotificationOut(
        id=n.notification_id,
        kind=n.kind,
        title=n.title,
        message=n.message,
        data=n.data,
        created_at=iso_ms(n.created_at) or "",
    )


def usage_out(month: str, counts: Mapping[str, int], monthly_quota: int | None) -> UsageOut:
    return UsageOut(month=month, **counts, monthly_quota=monthly_quota)
