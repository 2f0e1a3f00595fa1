"""Delivery Attempts: one item per outbound HTTP call, keyed (run_id, seq)."""

from __future__ import annotations

from typing import Any

from edgecron.data.conditional import save_if
from edgecron.data.models import AttemptModel
from edgecron.data.paging import Page, query_page


def put(attempt: AttemptModel) -> None:
    """Write once; a redelivered result for the same sequence number is ignored."""
    save_if(attempt, AttemptModel.seq.does_not_exist())


def list_page(run_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[AttemptModel]:
    return query_page(AttemptModel, run_id, limit, cursor, newest_first=False)
