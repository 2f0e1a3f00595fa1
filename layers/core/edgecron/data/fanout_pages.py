"""Fan-out pages: one small item per page of an Event's or a broadcast Fire's fan-out, holding the
Endpoints that page reached (at most one page of ids). A page is recorded in one transaction with
its owner's counters, so a page processed twice is recorded, counted and continued once, and no
item grows with the number of Endpoints. Reads return `FanoutPage` entities; the items' expiry
is this module's."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.transactions import TransactWrite

from edgecron.config import get_settings
from edgecron.data.conditional import error_code, update_if
from edgecron.data.expiry import expires_at_s
from edgecron.data.models import FanoutPageModel
from edgecron.domain.fanout_pages import FanoutPage

M = FanoutPageModel


def fire_owner(schedule_id: str, fire_at_ms: int) -> str:
    """The owner id of a broadcast Fire's pages (ids never contain '#')."""
    return f"{schedule_id}#{int(fire_at_ms)}"


def new_page(
    owner_id: str,
    page: int,
    app_id: str,
    after: str | None,
    last_endpoint_id: str | None,
    endpoint_ids: list[str],
    more: bool,
    now_ms: int,
) -> FanoutPage:
    return FanoutPage(
        owner_id=owner_id,
        page=page,
        app_id=app_id,
        created_at=now_ms,
        after=after,
        last_endpoint_id=last_endpoint_id,
        endpoint_ids=tuple(endpoint_ids),
        more=more,
    )


def to_entity(row: FanoutPageModel) -> FanoutPage:
    return FanoutPage(
        owner_id=row.owner_id,
        page=int(row.page),
        app_id=row.app_id,
        created_at=int(row.created_at),
        after=row.after,
        last_endpoint_id=row.last_endpoint_id,
        endpoint_ids=tuple(row.endpoint_ids or ()),
        more=bool(row.more),
        continued=bool(row.continued),
    )


def _row(page: FanoutPage) -> FanoutPageModel:
    return M(
        owner_id=page.owner_id,
        page=page.page,
        app_id=page.app_id,
        after=page.after,
        last_endpoint_id=page.last_endpoint_id,
        endpoint_ids=list(page.endpoint_ids),
        more=page.more,
        continued=page.continued,
        created_at=page.created_at,
        expires_at=expires_at_s(page.created_at),
    )


def get(owner_id: str, page: int) -> FanoutPage | None:
    try:
        return to_entity(M.get(owner_id, page, consistent_read=True))
    except DoesNotExist:
        return None


def pages(owner_id: str, start: int = 0) -> Iterator[FanoutPage]:
    """The owner's pages in order from `start`, strongly consistent (a page just recorded is seen)."""
    for row in M.query(owner_id, range_key_condition=M.page >= start, consistent_read=True):
        yield to_entity(row)


def last(owner_id: str) -> FanoutPage | None:
    result = M.query(owner_id, scan_index_forward=False, limit=1, consistent_read=True)
    row = next(iter(result), None)
    return None if row is None else to_entity(row)


def resume_point(owner_id: str) -> tuple[int, str | None] | None:
    """Where a stalled fan-out goes on: (page, cursor) of its first page not yet continued, or None
    when its last page is recorded."""
    page = last(owner_id)
    return (0, None) if page is None else page.resume_point()


def mark_continued(page: FanoutPage) -> bool:
    return update_if(M(owner_id=page.owner_id, page=page.page), [M.continued.set(True)], M.owner_id.exists())


def transaction() -> TransactWrite:
    return TransactWrite(connection=_connection(get_settings().region))


@cache
def _connection(region: str) -> Connection:
    """One connection per process, as the models have: a new one builds a botocore client, which
    loads the DynamoDB service model from disk, and that cost more than the transaction itself."""
    return Connection(region=region)


def record(
    page: FanoutPage,
    owner_update: tuple[Any, list[Any], Any],
    checks: list[tuple[Any, str, str | None, Any]] | None = None,
    *,
    also: list[tuple[Any, list[Any]]] | None = None,
) -> list[str | None]:
    """Put `page` if absent, update its owner (item, actions, condition), check other items
    (model class, hash key, range key, condition) and make the unconditional updates `also` (item,
    actions), all or nothing. Returns [] when written, else the cancellation reason code of each
    part in order (page, owner, checks…, also…; None = that part was fine)."""
    item, actions, condition = owner_update
    try:
        with transaction() as tx:
            tx.save(_row(page), condition=M.page.does_not_exist())
            tx.update(item, actions=actions, condition=condition)
            for other, other_actions in also or []:
                tx.update(other, actions=other_actions)
            for model_cls, hash_key, range_key, check_condition in checks or []:
                tx.condition_check(model_cls, hash_key, range_key, condition=check_condition)
    except TransactWriteError as exc:
        if error_code(exc) != "TransactionCanceledException":
            raise
        codes = [reason_code(reason) for reason in exc.cancellation_reasons]
        # DynamoDB answers in request order: checks, then the put, the updates
        k = len(checks or [])
        return [*codes[k : k + 2], *codes[:k], *codes[k + 2 :]]
    return []


def reason_code(reason: Any) -> str | None:
    code = getattr(reason, "code", None) if reason is not None else None
    return None if code in (None, "None") else str(code)
