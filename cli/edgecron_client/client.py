"""`EdgeCron`: one typed method per API route, grouped by resource (`client.task_runs.get(...)`).

List routes come three ways: `list()` is one page as the API sent it, `pages()` every page, `iter()`
every item across pages (`for run in client.task_runs.iter(status="failed")`). Creates that the API
deduplicates send an Idempotency-Key — the caller's, or a fresh one per call — and a retried create
sends the same key again, so a retry never creates a second resource.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any, cast

import urllib3

from edgecron_client.models import (
    ApiKey,
    ApiKeyCreated,
    ApiKeyRotated,
    App,
    AppCreated,
    Attempt,
    Endpoint,
    Event,
    Fire,
    Notification,
    Page,
    RecoverResult,
    ReplayResult,
    RetryPolicy,
    Schedule,
    TaskRun,
    Usage,
)
from edgecron_client.transport import DEFAULT_BACKOFF, DEFAULT_TIMEOUT_SEC, Backoff, Transport, drop_none

MAX_PAGE = 100  # the API's bound on ?limit=
FIRES_MAX_PAGE = 50  # each Fire carries its Task Runs, so its pages are smaller

Json = dict[str, Any]


def new_idempotency_key() -> str:
    return str(uuid.uuid4())


class _Resource:
    path = ""
    max_page = MAX_PAGE

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def _get(self, path: str, **params: Any) -> Any:
        return self._t.request("GET", path, params=params)

    def _post(self, path: str, body: Any = None, *, idempotency_key: str | None = None) -> Any:
        return self._t.request(
            "POST", path, body=body, send_body=body is not None, idempotency_key=idempotency_key
        )

    def _create(self, body: Json, idempotency_key: str | None) -> Any:
        return self._post(self.path, body, idempotency_key=idempotency_key or new_idempotency_key())

    def _patch(self, path: str, changes: Json) -> Any:
        return self._t.request("PATCH", path, body=changes, send_body=True)

    def _delete(self, path: str) -> None:
        self._t.request("DELETE", path)

    def _page(self, path: str, limit: int | None, cursor: str | None, filters: Json) -> Any:
        return self._get(path, **filters, limit=limit, cursor=cursor)

    def _pages(self, path: str, limit: int | None, cursor: str | None, filters: Json) -> Iterator[Any]:
        """Every page, following next_cursor until it is null (or repeats: that would loop forever)."""
        seen: set[str] = set()
        while True:
            page = self._page(path, limit or self.max_page, cursor, filters)
            yield page
            nxt = page.get("next_cursor") if isinstance(page, dict) else None
            if not nxt or nxt in seen:
                return
            seen.add(nxt)
            cursor = nxt


class _Listing[T](_Resource):
    """A resource with a list route at `path`."""

    def list(self, *, limit: int | None = None, cursor: str | None = None, **filters: Any) -> Page[T]:
        """One page, as the API sent it."""
        return cast(Page[T], self._page(self.path, limit, cursor, filters))

    def pages(
        self, *, limit: int | None = None, cursor: str | None = None, **filters: Any
    ) -> Iterator[Page[T]]:
        """Every page from `cursor` on (`limit` per page, the largest the API allows by default)."""
        return cast(Iterator[Page[T]], self._pages(self.path, limit, cursor, filters))

    def iter(self, *, limit: int | None = None, cursor: str | None = None, **filters: Any) -> Iterator[T]:
        """Every item across pages, fetching the next page only when the previous one is used up."""
        for page in self.pages(limit=limit, cursor=cursor, **filters):
            yield from page.get("data") or []


class ApiKeys(_Resource):
    """An App's API keys (the admin key). A key is shown once, by `create` or `rotate`; a create is
    not retried on 5xx (a retry would make a second key), so list the keys after such an error."""

    def list(self, app_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page[ApiKey]:
        """One page, newest first."""
        return cast(Page[ApiKey], self._page(f"/v1/apps/{app_id}/keys", limit, cursor, {}))

    def pages(
        self, app_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Iterator[Page[ApiKey]]:
        return cast(Iterator[Page[ApiKey]], self._pages(f"/v1/apps/{app_id}/keys", limit, cursor, {}))

    def iter(self, app_id: str, *, limit: int | None = None) -> Iterator[ApiKey]:
        for page in self.pages(app_id, limit=limit):
            yield from page.get("data") or []

    def create(self, app_id: str, *, name: str | None = None) -> ApiKeyCreated:
        body: Json = {"name": name} if name is not None else {}
        return cast(ApiKeyCreated, self._post(f"/v1/apps/{app_id}/keys", body))

    def rotate(self, app_id: str, key_id: str, *, grace_period_sec: int | None = None) -> ApiKeyRotated:
        """A new key; the old one keeps working for `grace_period_sec` (the API's default: 24 h;
        0 refuses it at once)."""
        body: Json = {} if grace_period_sec is None else {"grace_period_sec": grace_period_sec}
        return cast(ApiKeyRotated, self._post(f"/v1/apps/{app_id}/keys/{key_id}/rotate", body))

    def revoke(self, app_id: str, key_id: str) -> ApiKey:
        """Once this returns (about 10 s), every request that carries the key is refused."""
        return cast(ApiKey, self._t.request("DELETE", f"/v1/apps/{app_id}/keys/{key_id}"))


class Apps(_Resource):
    """Apps (the admin key); `apps.keys` manages their API keys."""

    path = "/v1/apps"

    def __init__(self, transport: Transport) -> None:
        super().__init__(transport)
        self.keys = ApiKeys(transport)

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> Page[App]:
        """One page of Apps (in no particular order)."""
        return cast(Page[App], self._page(self.path, limit, cursor, {}))

    def pages(self, *, limit: int | None = None, cursor: str | None = None) -> Iterator[Page[App]]:
        return cast(Iterator[Page[App]], self._pages(self.path, limit, cursor, {}))

    def iter(self, *, limit: int | None = None) -> Iterator[App]:
        for page in self.pages(limit=limit):
            yield from page.get("data") or []

    def create(self, name: str, monthly_quota: int | None = None) -> AppCreated:
        body: Json = {"name": name}
        if monthly_quota is not None:
            body["monthly_quota"] = monthly_quota
        return cast(AppCreated, self._post("/v1/apps", body))

    def set_quota(self, app_id: str, monthly_quota: int | None) -> App:
        """`None` makes the App unlimited."""
        path = f"/v1/apps/{app_id}/quota"
        return cast(App, self._t.request("PUT", path, body={"monthly_quota": monthly_quota}, send_body=True))

    def set_rate_limit(self, app_id: str, requests_per_sec: int | None) -> Json:
        """The App's request rate (429 with Retry-After beyond it); `None` clears it."""
        path = f"/v1/apps/{app_id}/rate-limit"
        body = {"requests_per_sec": requests_per_sec}
        return cast(Json, self._t.request("PUT", path, body=body, send_body=True))


class Endpoints(_Listing[Endpoint]):
    path = "/v1/endpoints"

    def create(self, body: Json, *, idempotency_key: str | None = None) -> Endpoint:
        """The answer carries the signing `secret`, shown this once."""
        return cast(Endpoint, self._create(body, idempotency_key))

    def get(self, endpoint_id: str) -> Endpoint:
        return cast(Endpoint, self._get(f"{self.path}/{endpoint_id}"))

    def update(self, endpoint_id: str, changes: Json) -> Endpoint:
        return cast(Endpoint, self._patch(f"{self.path}/{endpoint_id}", changes))

    def delete(self, endpoint_id: str) -> None:
        self._delete(f"{self.path}/{endpoint_id}")

    def rotate_secret(self, endpoint_id: str) -> Endpoint:
        return cast(Endpoint, self._post(f"{self.path}/{endpoint_id}/rotate-secret"))

    def recover(
        self, endpoint_id: str, since: str, until: str | None = None, cursor: str | None = None
    ) -> RecoverResult:
        """Re-send the Endpoint's runs that ended failed or dead_letter in [since, until] (RFC 3339),
        at most 1000 per call and a few seconds of work: call again with `cursor` set to the
        answer's `next_cursor` while `has_more`."""
        body = drop_none({"since": since, "until": until, "cursor": cursor})
        return cast(RecoverResult, self._post(f"{self.path}/{endpoint_id}/recover", body))


class RetryPolicies(_Listing[RetryPolicy]):
    path = "/v1/retry-policies"

    def create(self, body: Json, *, idempotency_key: str | None = None) -> RetryPolicy:
        return cast(RetryPolicy, self._create(body, idempotency_key))

    def get(self, policy_id: str) -> RetryPolicy:
        return cast(RetryPolicy, self._get(f"{self.path}/{policy_id}"))

    def update(self, policy_id: str, changes: Json) -> RetryPolicy:
        return cast(RetryPolicy, self._patch(f"{self.path}/{policy_id}", changes))

    def delete(self, policy_id: str) -> None:
        self._delete(f"{self.path}/{policy_id}")


class Fires(_Resource):
    """A Schedule's Fires, newest first."""

    max_page = FIRES_MAX_PAGE

    def list(self, schedule_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page[Fire]:
        return cast(Page[Fire], self._page(f"/v1/schedules/{schedule_id}/fires", limit, cursor, {}))

    def pages(
        self, schedule_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Iterator[Page[Fire]]:
        return cast(
            Iterator[Page[Fire]], self._pages(f"/v1/schedules/{schedule_id}/fires", limit, cursor, {})
        )

    def iter(
        self, schedule_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Iterator[Fire]:
        for page in self.pages(schedule_id, limit=limit, cursor=cursor):
            yield from page.get("data") or []


class Schedules(_Listing[Schedule]):
    path = "/v1/schedules"

    def __init__(self, transport: Transport) -> None:
        super().__init__(transport)
        self.fires = Fires(transport)

    def create(self, body: Json, *, idempotency_key: str | None = None) -> Schedule:
        return cast(Schedule, self._create(body, idempotency_key))

    def get(self, schedule_id: str, *, preview: int = 0) -> Schedule:
        """With `preview`, the next `preview` fire times too."""
        return cast(Schedule, self._get(f"{self.path}/{schedule_id}", preview=preview or None))

    def update(self, schedule_id: str, changes: Json) -> Schedule:
        return cast(Schedule, self._patch(f"{self.path}/{schedule_id}", changes))

    def delete(self, schedule_id: str) -> None:
        self._delete(f"{self.path}/{schedule_id}")

    def pause(self, schedule_id: str, *, reason: str | None = None) -> Schedule:
        """Pause; `reason` is shown as the Schedule's `pause_reason` until it is resumed."""
        body = {"reason": reason} if reason is not None else None
        return cast(Schedule, self._post(f"{self.path}/{schedule_id}/pause", body))

    def trigger(self, schedule_id: str) -> Fire:
        """One manual Fire now (`manual: true`); a paused or ended Schedule answers 409."""
        return cast(Fire, self._post(f"{self.path}/{schedule_id}/trigger"))

    def resume(self, schedule_id: str) -> Schedule:
        return cast(Schedule, self._post(f"{self.path}/{schedule_id}/resume"))


class Events(_Listing[Event]):
    path = "/v1/events"

    def publish(self, name: str, payload: Any = None, *, idempotency_key: str | None = None) -> Event:
        return cast(Event, self._create({"name": name, "payload": payload}, idempotency_key))

    def get(self, event_id: str, *, limit: int | None = None, cursor: str | None = None) -> Event:
        """The Event with one page of its deliveries (`deliveries_next_cursor` for the next)."""
        return cast(Event, self._get(f"{self.path}/{event_id}", limit=limit, cursor=cursor))

    def get_all(self, event_id: str, *, limit: int | None = None, cursor: str | None = None) -> Event:
        """The Event with every delivery, following `deliveries_next_cursor`."""
        event = self.get(event_id, limit=limit, cursor=cursor)
        seen: set[str] = set()
        while event.get("deliveries_next_cursor") not in (None, *seen):
            nxt = str(event["deliveries_next_cursor"])
            seen.add(nxt)
            page = self.get(event_id, limit=limit or MAX_PAGE, cursor=nxt)
            event["deliveries"] = [*event.get("deliveries", []), *page.get("deliveries", [])]
            event["deliveries_next_cursor"] = page.get("deliveries_next_cursor")
        return event


class Attempts(_Resource):
    """A Task Run's delivery attempts, in order."""

    def list(self, run_id: str, *, limit: int | None = None, cursor: str | None = None) -> Page[Attempt]:
        return cast(Page[Attempt], self._page(f"/v1/task-runs/{run_id}/attempts", limit, cursor, {}))

    def pages(
        self, run_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Iterator[Page[Attempt]]:
        return cast(
            Iterator[Page[Attempt]], self._pages(f"/v1/task-runs/{run_id}/attempts", limit, cursor, {})
        )

    def iter(self, run_id: str, *, limit: int | None = None, cursor: str | None = None) -> Iterator[Attempt]:
        for page in self.pages(run_id, limit=limit, cursor=cursor):
            yield from page.get("data") or []


class TaskRuns(_Listing[TaskRun]):
    path = "/v1/task-runs"

    def __init__(self, transport: Transport) -> None:
        super().__init__(transport)
        self.attempts = Attempts(transport)

    def create(self, body: Json, *, idempotency_key: str | None = None) -> TaskRun:
        return cast(TaskRun, self._create(body, idempotency_key))

    def get(self, run_id: str) -> TaskRun:
        return cast(TaskRun, self._get(f"{self.path}/{run_id}"))

    def cancel(self, run_id: str) -> TaskRun:
        return cast(TaskRun, self._post(f"{self.path}/{run_id}/cancel"))


class DeadLetters(_Listing[TaskRun]):
    path = "/v1/dead-letters"

    def replay(self, run_id: str) -> TaskRun:
        return cast(TaskRun, self._post(f"{self.path}/{run_id}/replay"))

    def replay_bulk(self, filters: Json) -> ReplayResult:
        """One bulk call (up to filters["limit"] runs and a few seconds of work); repeat with
        filters["cursor"] set to the answer's `next_cursor` while `has_more`."""
        return cast(ReplayResult, self._post(f"{self.path}/replay", drop_none(filters)))


class Notifications(_Listing[Notification]):
    path = "/v1/notifications"


class EdgeCron:
    """A client of one EdgeCron API: `base_url` and one bearer key (an App key, or the admin key for
    `apps`). `backoff` sets the retries on 429/5xx; `sleep` is how the client waits between them."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SEC,
        backoff: Backoff = DEFAULT_BACKOFF,
        pool: urllib3.PoolManager | None = None,
        sleep: Callable[[float], None] | None = None,
        user_agent: str | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
        self.transport = Transport(
            base_url, key, timeout=timeout, backoff=backoff, pool=pool, user_agent=user_agent, **kwargs
        )
        self.apps = Apps(self.transport)
        self.endpoints = Endpoints(self.transport)
        self.retry_policies = RetryPolicies(self.transport)
        self.schedules = Schedules(self.transport)
        self.events = Events(self.transport)
        self.task_runs = TaskRuns(self.transport)
        self.dead_letters = DeadLetters(self.transport)
        self.notifications = Notifications(self.transport)

    @property
    def base_url(self) -> str:
        return self.transport.base_url

    def usage(self, month: str | None = None) -> Usage:
        """Deliveries counted this month (or `month`, YYYY-MM) against the App's quota."""
        return cast(Usage, self.transport.request("GET", "/v1/usage", params={"month": month}))
