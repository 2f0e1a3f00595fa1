"""Billable trigger counters per App and calendar month (UTC), updated with atomic ADDs."""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist

from edgecron.data.models import UsageModel

KINDS = ("schedule", "event", "direct")


def add(app_id: str, month: str, kind: str, amount: int = 1) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown trigger kind {kind}")
    UsageModel(app_id=app_id, month=month).update(actions=[getattr(UsageModel, kind).add(amount)])


def get(app_id: str, month: str) -> dict[str, int]:
    try:
        item = UsageModel.get(app_id, month)
    except DoesNotExist:
        return dict.fromkeys(KINDS, 0)
    return {kind: int(getattr(item, kind) or 0) for kind in KINDS}
