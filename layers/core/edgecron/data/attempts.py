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
from edgecron.data.keys import run_partition
from edgecron.data.models import AttemptModel, AttemptRecord, TaskRunModel
from edgecron.data.paging import Page, query_page
from edgecron.domain.attempts import Attempt

# Text kept in the run item at most (response summary + error + its detail): the run item stays under 1 KB, so its
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
    "error_detail",
    "outcome",
    "trace_id",
    "started_at",
)


def _entity(item: AttemptModel | AttemptRecord, run_id: str, app_id: str) -> Attempt:
    def num(name: str) -> int | None:
        value = getattr(item, name, None)
        return None if value is None else int(value)

    return Attempt(
        run_id=run_id,
        seq=int(item.seq),
        app_id=app_id,
        attempt_no=int(item.attempt_no),
        series=int(item.series or 1),
        request_id=str(item.request_id),
        status_code=num("status_code"),
        latency_ms=int(item.latency_ms),
        response_summary=item.response_summary,
        error=item.error,
        error_kind=item.error_kind,
        error_detail=getattr(item, "error_detail", None),
        outcome=str(item.outcome),
        started_at=int(item.started_at),
        trace_id=item.trace_id,
        expires_at=num("expires_at"),
    )


def _of_item(item: AttemptModel) -> Attempt:
    return _entity(item, item.run_id, item.app_id)


def put(attempt: Attempt) -> bool:
    """Write once; a redelivered result for the same sequence number is ignored (False)."""
    item = AttemptModel(run_id=attempt.run_id, app_id=attempt.app_id, expires_at=attempt.expires_at)
    for name in _FIELDS:
        setattr(item, name, getattr(attempt, name))
    return save_if(item, AttemptModel.seq.does_not_exist())


def fits_in_run(attempt: Attempt) -> bool:
    """Whether `attempt` may be kept inside its run item: the first of the run, and small."""
    text = len(attempt.response_summary or "") + len(attempt.error or "") + len(attempt.error_detail or "")
    return int(attempt.seq) == 1 and text <= INLINE_TEXT_MAX


def as_record(attempt: Attempt) -> AttemptRecord:
    """The run item's `first_attempt` value for `attempt` (data/runs.py writes it)."""
    return AttemptRecord(**{name: getattr(attempt, name) for name in _FIELDS})


def _run(
    app_id: str, run_id: str, *, consistent: bool, attributes: list[str] | None = None
) -> TaskRunModel | None:
    if not app_id or not run_id:  # no key names it (DynamoDB refuses an empty key)
        return None
    try:
        return TaskRunModel.get(
            run_partition(app_id, run_id), run_id, consistent_read=consistent, attributes_to_get=attributes
        )
    except DoesNotExist:
        return None


def _first_of(app_id: str, run_id: str) -> Attempt | None:
    run = _run(app_id, run_id, consistent=False, attributes=["run_id", "app_id", "first_attempt"])
    if run is None or run.first_attempt is None:
        return None
    return _entity(run.first_attempt, run.run_id, run.app_id)


def _cursor(run_id: str, seq: int) -> dict[str, Any]:
    return {"run_id": {"S": run_id}, "seq": {"N": str(seq)}}


def _table_page(run_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[Attempt]:
    page = query_page(AttemptModel, run_id, limit, cursor, newest_first=False)
    return Page(items=[_of_item(a) for a in page.items], last_key=page.last_key)


def list_page(app_id: str, run_id: str, limit: int, cursor: dict[str, Any] | None) -> Page[Attempt]:
    """Attempts in sequence order. The first page starts with the Attempt kept in the run item, if
    any; the cursor is the key (run_id, seq) of the last Attempt returned, whichever place held it."""
    first = _first_of(app_id, run_id) if cursor is None else None
    if first is None:
        return _table_page(run_id, limit, cursor)
    if limit <= 1:
        rest = _table_page(run_id, 1, _cursor(run_id, first.seq))
        return Page(items=[first], last_key=_cursor(run_id, first.seq) if rest.items else None)
    page = _table_page(run_id, limit - 1, None)
    items = [first, *(a for a in page.items if a.seq != first.seq)]
    return Page(items=items, last_key=page.last_key)


def all_of(app_id: str, run_id: str) -> list[Attempt]:
    """Every Attempt of the App's run, in sequence order (strongly consistent reads)."""
    run = _run(app_id, run_id, consistent=True)
    found = [_of_item(a) for a in AttemptModel.query(run_id, consistent_read=True) if a.app_id == app_id]
    if run is not None and run.first_attempt is not None:
        found.append(_entity(run.first_attempt, run.run_id, run.app_id))
    unique = {a.seq: a for a in found}
    return [unique[seq] for seq in sorted(unique)]
