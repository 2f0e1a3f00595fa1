"""Jitter: a schedule's fires are spread over [0, jitter_sec) after their fire time, so many
schedules on the same cron time (`0 * * * *`) do not all hit at the same second. The offset is a
hash of the schedule id and the fire time: the same fire always gets the same offset (a re-driven
dispatch delivers at the same moment), and different schedules or fire times spread evenly."""

from __future__ import annotations

import hashlib

JITTER_MAX_SEC = 3600


def offset_ms(schedule_id: str, fire_at_ms: int, jitter_sec: int) -> int:
    """The fire's offset in milliseconds, in [0, jitter_sec * 1000); 0 without jitter."""
    if jitter_sec <= 0:
        return 0
    digest = hashlib.sha256(f"{schedule_id}\x00{fire_at_ms}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (jitter_sec * 1000)


def due_at_ms(schedule_id: str, fire_at_ms: int, jitter_sec: int, now_ms: int) -> int:
    """When the fire's runs are due: its fire time plus its offset. A fire dispatched after that
    moment (a late fire: an outage's catch-up, a lost message) is due at once."""
    if jitter_sec <= 0:
        return fire_at_ms
    return max(fire_at_ms + offset_ms(schedule_id, fire_at_ms, jitter_sec), now_ms)
