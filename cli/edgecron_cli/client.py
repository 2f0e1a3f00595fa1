"""A thin HTTP client for every route of the EdgeCron API (brief §4), and the CLI's exit codes.

Each method is one request and returns the decoded JSON body as the API sent it, so `--json` can print
it unchanged. Failures become `ApiError` (the API answered with an error) or `TransportError` (no usable
answer); `exit_code()` maps both to the exit codes scripts rely on (docs/cli.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import metadata
from typing import Any

import requests

EXIT_OK = 0
EXIT_API_ERROR = 1  # any other 4xx; also a failed run for `runs watch`
EXIT_USAGE = 2  # bad flags (typer's default) or nothing configured
EXIT_NOT_FOUND = 3
EXIT_AUTH = 4
EXIT_CONFLICT = 5
EXIT_SERVER = 6  # 5xx, an unreadable answer, or no answer at all (connection refused, timeout)

MAX_PAGE = 100  # the API's bound on ?limit=
DEFAULT_TIMEOUT_SEC = 30.0

Json = dict[str, Any]


def _version() -> str:
    try:
        return metadata.version("edgecron")
    except metadata.PackageNotFoundError:
        return "dev"


class ApiError(Exception):
    """The API answered with an error status and (normally) `{"error": {code, message, field}}`."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field

    def __str__(self) -> str:
        text = f"{self.code}: {self.message}"
        return f"{text} (field: {self.field})" if self.field else text


class TransportError(Exception):
    """No usable answer: connection refused, timeout, or a body that is not the API's JSON."""


def exit_code(error: Exception) -> int:
    """The documented exit code for a failed request."""
    if isinstance(error, ApiError):
        if error.status == 404:
            return EXIT_NOT_FOUND
        if error.status == 401:
            return EXIT_AUTH
        if error.status == 409:
            return EXIT_CONFLICT
        if error.status >= 500:
            return EXIT_SERVER
        return EXIT_API_ERROR
    return EXIT_SERVER


def _error_from(response: requests.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        field = error.get("field")
        return ApiError(
            response.status_code,
            error["code"],
            str(error.get("message") or response.reason or ""),
            field if isinstance(field, str) else None,
        )
    text = " ".join(response.text.split())[:200] or response.reason or "no body"
    return ApiError(response.status_code, f"HTTP_{response.status_code}", text)


_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def _describe(exc: requests.RequestException) -> str:
    """A one-line reason, instead of urllib3's nested retry message."""
    if isinstance(exc, requests.Timeout):
        return "timed out"
    match = _ERRNO.search(str(exc))
    if match:
        return match.group(1).strip().lower()
    return type(exc).__name__


def _drop_none(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


class Client:
    """One base URL and one bearer key (an App key, or the admin key for /v1/apps)."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SEC,
        session: requests.Session | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._session = session or requests.Session()
        self._headers = {
            "Authorization": f"Bearer {key}",
            "Accept": "application/json",
            "User-Agent": f"edgecron-cli/{_version()}",
        }

    # -- transport -------------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        send_body: bool = False,
        idempotency_key: str | None = None,
    ) -> Any:
        """Send one request (a JSON body only with `send_body`); the decoded JSON body, or None for 204."""
        headers = dict(self._headers)
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        url = self.base_url + path
        try:
            response = self._session.request(
                method,
                url,
                params=_drop_none(params or {}),
                json=body if send_body else None,
                headers=headers,
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            raise TransportError(f"cannot reach {self.base_url}: {_describe(exc)}") from exc
        if response.status_code >= 400:
            raise _error_from(response)
        if response.status_code >= 300:  # the API never redirects: the URL is wrong (http vs https?)
            where = response.headers.get("location", "elsewhere")
            raise TransportError(
                f"{method} {url} redirected ({response.status_code}) to {where}; check the URL"
            )
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise TransportError(
                f"{method} {path} answered {response.status_code} with a body that is not JSON"
            ) from exc

    def _get(self, path: str, **params: Any) -> Json:
        result: Json = self.request("GET", path, params=params)
        return result

    def _post(self, path: str, body: Any = None, *, idempotency_key: str | None = None) -> Json:
        result: Json = self.request(
            "POST", path, body=body, send_body=body is not None, idempotency_key=idempotency_key
        )
        return result

    def pages(self, path: str, params: dict[str, Any], limit: int | None = None) -> Iterator[Json]:
        """Every page of a list route, following next_cursor until it is null."""
        query = {**params, "limit": limit or MAX_PAGE}
        seen: set[str] = set()
        while True:
            page = self._get(path, **query)
            yield page
            cursor = page.get("next_cursor")
            if not cursor or cursor in seen:  # a repeated cursor would loop forever
                return
            seen.add(cursor)
            query["cursor"] = cursor

    def fetch_list(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        follow: bool = False,
    ) -> Json:
        """One page as the API sent it, or with `follow` every page merged into `{"data": [...]}`."""
        params = params or {}
        if not follow:
            return self._get(path, **params, limit=limit, cursor=cursor)
        data: list[Any] = []
        for page in self.pages(path, {**params, "cursor": cursor}, limit):
            data.extend(page.get("data") or [])
        return {"data": data}

    # -- Apps (admin key) ------------------------------------------------------------------------------

    def create_app(self, name: str, monthly_quota: int | None = None) -> Json:
        body: Json = {"name": name}
        if monthly_quota is not None:
            body["monthly_quota"] = monthly_quota
        return self._post("/v1/apps", body)

    def set_quota(self, app_id: str, monthly_quota: int | None) -> Json:
        result: Json = self.request(
            "PUT", f"/v1/apps/{app_id}/quota", body={"monthly_quota": monthly_quota}, send_body=True
        )
        return result

    # -- Endpoints -------------------------------------------------------------------------------------

    def create_endpoint(self, body: Json, idempotency_key: str | None = None) -> Json:
        return self._post("/v1/endpoints", body, idempotency_key=idempotency_key)

    def list_endpoints(self, **kw: Any) -> Json:
        return self.fetch_list("/v1/endpoints", **kw)

    def get_endpoint(self, endpoint_id: str) -> Json:
        return self._get(f"/v1/endpoints/{endpoint_id}")

    def update_endpoint(self, endpoint_id: str, changes: Json) -> Json:
        result: Json = self.request("PATCH", f"/v1/endpoints/{endpoint_id}", body=changes, send_body=True)
        return result

    def delete_endpoint(self, endpoint_id: str) -> None:
        self.request("DELETE", f"/v1/endpoints/{endpoint_id}")

    def rotate_secret(self, endpoint_id: str) -> Json:
        return self._post(f"/v1/endpoints/{endpoint_id}/rotate-secret")

    # -- Retry Policies --------------------------------------------------------------------------------

    def create_retry_policy(self, body: Json, idempotency_key: str | None = None) -> Json:
        return self._post("/v1/retry-policies", body, idempotency_key=idempotency_key)

    def list_retry_policies(self, **kw: Any) -> Json:
        return self.fetch_list("/v1/retry-policies", **kw)

    def get_retry_policy(self, policy_id: str) -> Json:
        return self._get(f"/v1/retry-policies/{policy_id}")

    def update_retry_policy(self, policy_id: str, changes: Json) -> Json:
        result: Json = self.request("PATCH", f"/v1/retry-policies/{policy_id}", body=changes, send_body=True)
        return result

    def delete_retry_policy(self, policy_id: str) -> None:
        self.request("DELETE", f"/v1/retry-policies/{policy_id}")

    # -- Schedules -------------------------------------------------------------------------------------

    def create_schedule(self, body: Json, idempotency_key: str | None = None) -> Json:
        return self._post("/v1/schedules", body, idempotency_key=idempotency_key)

    def list_schedules(self, **kw: Any) -> Json:
        return self.fetch_list("/v1/schedules", **kw)

    def get_schedule(self, schedule_id: str, preview: int = 0) -> Json:
        return self._get(f"/v1/schedules/{schedule_id}", preview=preview or None)

    def update_schedule(self, schedule_id: str, changes: Json) -> Json:
        result: Json = self.request("PATCH", f"/v1/schedules/{schedule_id}", body=changes, send_body=True)
        return result

    def delete_schedule(self, schedule_id: str) -> None:
        self.request("DELETE", f"/v1/schedules/{schedule_id}")

    def pause_schedule(self, schedule_id: str) -> Json:
        return self._post(f"/v1/schedules/{schedule_id}/pause")

    def resume_schedule(self, schedule_id: str) -> Json:
        return self._post(f"/v1/schedules/{schedule_id}/resume")

    def list_fires(
        self, schedule_id: str, limit: int | None = None, cursor: str | None = None, follow: bool = False
    ) -> Json:
        """Fires newest first; pages hold at most 50 (each Fire carries its Task Runs)."""
        if follow and limit is None:
            limit = 50
        return self.fetch_list(
            f"/v1/schedules/{schedule_id}/fires", limit=limit, cursor=cursor, follow=follow
        )

    # -- Events ----------------------------------------------------------------------------------------

    def publish_event(self, name: str, payload: Any = None, idempotency_key: str | None = None) -> Json:
        return self._post("/v1/events", {"name": name, "payload": payload}, idempotency_key=idempotency_key)

    def list_events(self, **kw: Any) -> Json:
        return self.fetch_list("/v1/events", **kw)

    def get_event(
        self, event_id: str, *, limit: int | None = None, cursor: str | None = None, follow: bool = False
    ) -> Json:
        """The Event with one page of deliveries, or with `follow` all of them."""
        event = self._get(f"/v1/events/{event_id}", limit=limit, cursor=cursor)
        seen: set[str] = set()
        while follow and event.get("deliveries_next_cursor") not in (None, *seen):
            nxt = str(event["deliveries_next_cursor"])
            seen.add(nxt)
            page = self._get(f"/v1/events/{event_id}", limit=limit or MAX_PAGE, cursor=nxt)
            event["deliveries"] = [*event.get("deliveries", []), *page.get("deliveries", [])]
            event["deliveries_next_cursor"] = page.get("deliveries_next_cursor")
        return event

    # -- Task Runs -------------------------------------------------------------------------------------

    def create_run(self, body: Json, idempotency_key: str | None = None) -> Json:
        return self._post("/v1/task-runs", body, idempotency_key=idempotency_key)

    def list_runs(self, **kw: Any) -> Json:
        return self.fetch_list("/v1/task-runs", **kw)

    def get_run(self, run_id: str) -> Json:
        return self._get(f"/v1/task-runs/{run_id}")

    def cancel_run(self, run_id: str) -> Json:
        return self._post(f"/v1/task-runs/{run_id}/cancel")

    def list_attempts(self, run_id: str, **kw: Any) -> Json:
        return self.fetch_list(f"/v1/task-runs/{run_id}/attempts", **kw)

    # -- Dead letters ----------------------------------------------------------------------------------

    def list_dead_letters(self, **kw: Any) -> Json:
        return self.fetch_list("/v1/dead-letters", **kw)

    def replay(self, run_id: str) -> Json:
        return self._post(f"/v1/dead-letters/{run_id}/replay")

    def replay_bulk(self, filters: Json) -> Json:
        """One bulk call (up to filters["limit"] runs); the caller repeats while has_more."""
        return self._post("/v1/dead-letters/replay", _drop_none(filters))

    # -- Usage and notifications -----------------------------------------------------------------------

    def usage(self, month: str | None = None) -> Json:
        return self._get("/v1/usage", month=month)

    def list_notifications(self, **kw: Any) -> Json:
        return self.fetch_list("/v1/notifications", **kw)
