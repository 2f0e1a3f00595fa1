"""App notifications (auto-pause and other notices) and the SNS alerts topic. Reads return
`Notification` entities; their expiry is this module's."""

from __future__ import annotations

import json
from typing import Any

from edgecron import ids
from edgecron.config import get_settings
from edgecron.data.aws import client
from edgecron.data.expiry import expires_at_s
from edgecron.data.keys import alive
from edgecron.data.models import NotificationModel
from edgecron.data.paging import Page, query_page
from edgecron.domain.notifications import Notification
from edgecron.observability import ALERT_PUBLISH_FAILED, count, logger


def record(
    app_id: str, kind: str, title: str, message: str, data: dict[str, Any], now_ms: int
) -> Notification:
    note = Notification(
        app_id=app_id,
        notification_id=ids.new_id("ntf", now_ms),
        kind=kind,
        title=title,
        message=message,
        data=data,
        created_at=now_ms,
    )
    NotificationModel(
        app_id=note.app_id,
        notification_id=note.notification_id,
        kind=note.kind,
        title=note.title,
        message=note.message,
        data=note.data,
        created_at=note.created_at,
        expires_at=expires_at_s(now_ms),
    ).save()
    return note


def to_entity(row: NotificationModel) -> Notification:
    return Notification(
        app_id=row.app_id,
        notification_id=row.notification_id,
        kind=row.kind,
        title=row.title,
        message=row.message,
        created_at=int(row.created_at),
        data=row.data,
    )


def list_page(app_id: str, limit: int, cursor: dict[str, Any] | None, now_ms: int) -> Page[Notification]:
    page = query_page(
        NotificationModel,
        app_id,
        limit,
        cursor,
        newest_first=True,
        filter_condition=alive(NotificationModel, now_ms),
    )
    return Page([to_entity(row) for row in page.items], page.last_key)


SUBJECT_MAX = 100  # SNS: at most 100 printable ASCII characters, no line breaks


def alert_subject(text: str) -> str:
    """The text as an SNS Subject: SNS refuses line breaks, control and non-ASCII characters (the
    subject carries names users chose), so each run of them becomes one space."""
    printable = "".join(c if " " <= c <= "~" else " " for c in text)
    return " ".join(printable.split())[:SUBJECT_MAX] or "EdgeCron alert"


def publish_alert(subject: str, message: dict[str, Any]) -> bool:
    """Publish to the alerts topic; a failure is never raised (the pause already happened) but is
    logged and counted in the AlertPublishFailed metric, which an alarm watches."""
    arn = get_settings().alerts_topic_arn
    if not arn:
        return False
    try:
        client("sns").publish(
            TopicArn=arn, Subject=alert_subject(subject), Message=json.dumps(message, default=str)
        )
        return True
    except Exception:
        logger.exception("could not publish the alert", extra={"subject": subject})
        count(ALERT_PUBLISH_FAILED)
        return False
