"""Events, and the paged read of an App's Endpoints that the fan-out walks.

Every read is keyed by app_id (the hash key of both tables), so a fan-out never sees another App's
Endpoints. The matched Endpoint ids are appended to the Event with an optimistic lock on the list
size, so a page processed twice (a duplicated message, a crash before the page was recorded)
never records an Endpoint twice."""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist
from pynamodb.expressions.condition import size

from edgecron import ids
from edgecron.data.conditional import update_if
from edgecron.data.expiry import is_alive
from edgecron.data.models import EndpointModel, EventModel
from edgecron.data.paging import Page, query_page
from edgecron.observability import logger

M = EventModel
PENDING, RUNNING, DONE = "pending", "running", "done"
# The Event item holds the payload (≤ 200 KiB as compact JSON; pynamodb stores it with spaces) and
# the matched Endpoint ids (~32 bytes each); DynamoDB items stop at 400 KB. Runs beyond this many
# are still created and delivered, the Event just stops listing them.
MAX_RECORDED_ENDPOINTS = 4_000
_RECORD_TRIES = 8
_MATCH_ATTRIBUTES = ["app_id", "endpoint_id", "active", "filter_events"]


def put_new(event: EventModel) -> None:
    event.save(condition=M.event_id.does_not_exist())


def delete(app_id: str, event_id: str) -> None:
    M(app_id=app_id, event_id=event_id).delete()


def get(app_id: str, event_id: str, *, consistent: bool = False) -> EventModel | None:
    try:
        return M.get(app_id, event_id, consistent_read=consistent)
    except DoesNotExist:
        return None


def get_for_app(app_id: str, event_id: str, now_ms: int) -> EventModel | None:
    event = get(app_id, event_id)
    if event is None or not is_alive(event.expires_at, now_ms):
        return None
    return event


def id_floor(ms: int) -> str:
    """The smallest possible event id created at `ms` (ids are time-sortable ULIDs)."""
    return ids.new_id("evt", ms)[:14]


def list_page(
    app_id: str,
    limit: int,
    cursor: dict[str, Any] | None,
    now_ms: int,
    *,
    name: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> Page[EventModel]:
    """Newest first; the time window is a key condition on the time-sortable event id."""
    rk: Any = None
    if since_ms is not None and until_ms is not None:
        rk = M.event_id.between(id_floor(since_ms), id_floor(until_ms) + "~")
    elif since_ms is not None:
        rk = M.event_id >= id_floor(since_ms)
    elif until_ms is not None:
        rk = M.event_id <= id_floor(until_ms) + "~"
    cond = M.expires_at.does_not_exist() | (M.expires_at > now_ms // 1000)
    if name:
        cond &= M.name == name
    return query_page(M, app_id, limit, cursor, range_key_condition=rk, filter_condition=cond)


def endpoints_page(app_id: str, after: str | None, limit: int) -> tuple[list[EndpointModel], bool]:
    """Up to `limit` Endpoints of the App in id order after `after`, and whether more remain.
    Strongly consistent, so an Endpoint created just before a publish is seen by its fan-out.
    Only the attributes matching needs are read (never the signing secrets)."""
    rk = EndpointModel.endpoint_id > after if after else None
    items = list(
        EndpointModel.query(
            app_id,
            range_key_condition=rk,
            limit=limit + 1,
            page_size=limit + 1,
            consistent_read=True,
            attributes_to_get=_MATCH_ATTRIBUTES,
        )
    )
    return items[:limit], len(items) > limit


def record_page(event: EventModel, matched: list[str], done: bool) -> EventModel | None:
    """Append the page's matched Endpoint ids not yet recorded and move fanout_status forward
    (pending → running → done, never back). Returns the Event as stored, None if it is gone."""
    current: EventModel | None = event
    for _ in range(_RECORD_TRIES):
        if current is None:
            return None
        recorded = list(current.endpoint_ids or [])
        seen = set(recorded)
        room = max(0, MAX_RECORDED_ENDPOINTS - len(recorded))
        new = [endpoint_id for endpoint_id in dict.fromkeys(matched) if endpoint_id not in seen][:room]
        status = DONE if done or current.fanout_status == DONE else RUNNING
        if not new and current.fanout_status == status:
            return current
        actions: list[Any] = [M.fanout_status.set(status)]
        if new:
            actions.append(M.endpoint_ids.set((M.endpoint_ids | []).append(new)))
        unchanged_list = (
            size(M.endpoint_ids) == len(recorded)
            if recorded
            else (M.endpoint_ids.does_not_exist() | (size(M.endpoint_ids) == 0))
        )
        condition = M.event_id.exists() & (M.fanout_status == current.fanout_status) & unchanged_list
        if update_if(current, actions, condition):
            return current
        current = get(event.app_id, event.event_id, consistent=True)
    logger.warning("event update kept conflicting", extra={"event_id": event.event_id})
    raise RuntimeError(f"could not record the fan-out page of {event.event_id}")
