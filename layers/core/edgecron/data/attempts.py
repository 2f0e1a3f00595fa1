"""Delivery Attempts: one per outbound HTTP call, keyed (run_id, seq).

A run's first Attempt is usually kept inside the run item (`first_attempt`), written by the same
update that stores the attempt's result, so a delivery that succeeds at once writes no Attempt item
(one write unit less). Every later Attempt, a first one too large to keep the run item small, one
whose run update lost a race, and an attempt recorded as lost by whoever took a run over, is an item
of the Attempts table. Listing merges the two: the first Attempt, then the table's items in order."""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist

from edgecron.data.conditional import save_if
from edgecron.data.models import AttemptModel, AttemptRecord, TaskRunModel
from edgecron.data.paging import Page, query_page

# Text kept in the run item at most (response summary + error): the run item stays under 1 KB, so its
# later writes (finish, a retry's claim) cost one write unit as before.
INLINE_TEXT_MAX = 320
_FIELDS = (
    "seq",
    "attempt_no",
    "series",
    "request_id",
    "status_code",
    "latency_ms",
    "response_summary",
    "error",
    "error_kind",
    "outcome",
    "trace_id",
    "started_at",
)


def put(attempt: AttemptModel) -> None:
    """Write once; a redelivered result for the same sequence number is ignored."""
    save_if(attempt, AttemptModel.seq.does_not_exist())


def fits_in_run(attempt: AttemptModel) -> bool:
    """Whether `attempt` may be kept inside its run item: the first of the run, and small."""
    text = len(attempt.response_summary or "") + len(attempt.error or "")
    return int(attempt.seq) == 1 and text <= INLINE_TEXT_MAX


def as_record(attempt: AttemptModel) -> AttemptRecord:
    """The run item's `first_attempt` value for `attempt` (data/runs.py writes it)."""
    return AttemptRecord(**{name: getattr(attempt, name) for name in _FIELDS})


def _from_record(run_id: str, app_id: str, record: AttemptRecord) -> AttemptModel:
    attempt = AttemptModel(run_id=run_id, app_id=app_id)
    for name in _FIELDS:
        setattr(attempt, name, getattr(record, name, None))
    return attempt


def _first_of(run_id: str) -> AttemptModel | None:
    try:
        run = TaskRunModel.get(run_id, attributes_to_get=["run_id", "app_id", "first_attempt"])
    except DoesNotExist:
        return None
    if run.first_attempt is None:
        return None
    return _from_record(run.run_id, run.app_id, run.first_attempt)


def _cursor(run_id: str, seq: int) -> dict[str, Any]:
    return {"run_id": {"S": run_id}, "seq": {"N": str(seq)}}


def list_page(run_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[AttemptModel]:
    """Attempts in sequence order. The first page starts with the Attempt kept in the run item, if
    any; the cursor is the key (run_id, seq) of the last Attempt returned, whichever place held it."""
    first = _first_of(run_id) if cursor is None else None
    if first is None:
        return query_page(AttemptModel, run_id, limit, cursor, newest_first=False)
    if limit <= 1:
        rest = query_page(AttemptModel, run_id, 1, _cursor(run_id, int(first.seq)), newest_first=False)
        return Page(items=[first], last_key=_cursor(run_id, int(first.seq)) if rest.items else None)
    page = query_page(AttemptModel, run_id, limit - 1, None, newest_first=False)
    items = [first, *(a for a in page.items if int(a.seq) != int(first.seq))]
    return Page(items=items, last_key=page.last_key)


def all_of(run_id: str) -> list[AttemptModel]:
    """Every Attempt of a run, in sequence order (strongly consistent reads)."""
    try:
        run = TaskRunModel.get(run_id, consistent_read=True)
    except DoesNotExist:
        run = None
    found = list(AttemptModel.query(run_id, consistent_read=True))
    if run is not None and run.first_attempt is not None:
        found.append(_from_record(run.run_id, run.app_id, run.first_attempt))
    unique = {int(a.seq): a for a in found}
    return [unique[seq] for seq in sorted(unique)]
