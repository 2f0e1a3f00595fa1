"""Operational events: EdgeCron publishes what it did on its own (an Endpoint failing or disabled, a
run dead-lettered, a schedule paused, fire times missed) into the App as Events, fanned out and
signed like any Event, so a receiver can react to them (page someone, open a ticket).

- They reach only Endpoints whose `filter_events` name them or `edgecron.*` (domain/event_filters.py);
  which ones an App's Endpoints take is kept on the App by every Endpoint write, so an App without
  such an Endpoint gets none and pays one read of its App item.
- They are never billed and never count against the quota.
- They never trigger each other: nothing is published about the delivery of an operational event
  (its failure still counts for its Endpoint's health).
- Each is published by the writer that won the conditional write it reports, so it is published
  once. It is best effort: publishing never fails what reported it, and a worker that dies between
  storing the Event and sending its fan-out message leaves it `pending` (the notification and the
  run's own state remain the durable record)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from edgecron.clock import iso_ms
from edgecron.data import apps as app_data
from edgecron.data import endpoints as endpoint_data
from edgecron.data import events as event_data
from edgecron.data.queues import send_fanout
from edgecron.domain.endpoints import Endpoint
from edgecron.domain.event_filters import is_operational, matches_any
from edgecron.domain.events import Event
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import OperationalEvent, Source
from edgecron.observability import logger


def is_operational_delivery(run: TaskRun) -> bool:
    """Whether the run delivers an operational event (nothing is published about such a run)."""
    if run.source != Source.EVENT or not run.source_id:
        return False
    event = event_data.get(run.app_id, run.source_id)
    return event is not None and is_operational(event.name)


def subscriptions(endpoints: Iterable[Endpoint]) -> frozenset[str]:
    """The operational events some of these Endpoints would receive (those that take runs)."""
    filters = [ep.filter_events for ep in endpoints if ep.receives_runs]
    return frozenset(str(name) for name in OperationalEvent if any(matches_any(f, name) for f in filters))


def refresh_subscriptions(app_id: str) -> None:
    """After an Endpoint of the App was created, changed or deleted: store which operational events
    its Endpoints subscribe to, so publishing costs one read of the App and nothing for an App that
    subscribes to none. Read strongly consistent, after the Endpoint's own write."""
    app_data.set_operational_subscriptions(
        app_id, subscriptions(endpoint_data.all_for_app(app_id, consistent=True))
    )


def has_subscriber(app_id: str, name: OperationalEvent) -> bool:
    app = app_data.get_app(app_id)
    return app is not None and str(name) in app.operational_subscriptions


def publish(
    app_id: str,
    name: OperationalEvent,
    data: dict[str, Any],
    now_ms: int,
    *,
    cause: TaskRun | None = None,
) -> Event | None:
    """Publish one operational event into the App; None when nothing was published (no Endpoint
    subscribes, or `cause` is itself the delivery of an operational event). Never raises."""
    try:
        if cause is not None and is_operational_delivery(cause):
            return None
        if not has_subscriber(app_id, name):
            return None
        event = event_data.new_event(app_id, str(name), {**data, "occurred_at": iso_ms(now_ms)}, now_ms)
        event_data.put_new(event)
        send_fanout(event.event_id, app_id)
        return event
    except Exception:
        logger.exception("could not publish an operational event", extra={"event_name": str(name)})
        return None


def run_facts(run: TaskRun) -> dict[str, Any]:
    """What an operational event says about a run."""
    return {
        "task_run_id": run.run_id,
        "endpoint_id": run.endpoint_id,
        "source": run.source,
        "source_id": run.source_id,
        "attempt_count": int(run.attempt_count or 0),
        "last_status_code": int(run.last_status_code) if run.last_status_code is not None else None,
        "last_error": run.last_error,
        "last_error_kind": run.last_error_kind,
    }


def fires_missed(
    app_id: str, schedule_id: str, fire_times_ms: list[int], total: int, policy: str | None, now_ms: int
) -> None:
    """Fire times of a schedule passed without running: the ones recorded, and how many in all."""
    publish(
        app_id,
        OperationalEvent.FIRE_MISSED,
        {
            "schedule_id": schedule_id,
            "fire_times": [iso_ms(ms) for ms in fire_times_ms],
            "missed": total,
            "missed_policy": policy,
        },
        now_ms,
    )
