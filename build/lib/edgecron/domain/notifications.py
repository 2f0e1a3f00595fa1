"""An App notification: a notice EdgeCron leaves for the App's owners (a schedule paused for
failing, an Endpoint failing or disabled), listed newest first until it expires."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Notification:
    app_id: str
    notification_id: str
    kind: str  # a NotificationKind (kept as stored: a kind of a later release still lists)
    title: str
    message: str
    created_at: int
    data: Any = None
