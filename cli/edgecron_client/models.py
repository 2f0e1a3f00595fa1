"""The API's resources as TypedDicts: typed for callers and type checkers, plain JSON dicts at run time
(so a caller can print or store them as the API sent them). Keys the API may add later are not listed;
`total=False` keeps a model valid when an older or newer API leaves a key out."""

from __future__ import annotations

from typing import Any, TypedDict


class Page[T](TypedDict):
    """One page of a list route; pass `next_cursor` as `cursor=` for the next (None at the end)."""

    data: list[T]
    next_cursor: str | None


class App(TypedDict, total=False):
    id: str
    name: str
    monthly_quota: int | None
    created_at: str


class AppCreated(TypedDict):
    app: App
    api_key: str  # shown once; the API stores only its hash


class ApiKey(TypedDict, total=False):
    """An App API key as listed: never the key itself."""

    id: str  # names the key in the key routes
    prefix: str  # the key's first characters
    name: str | None
    state: str  # active | expiring (rotated: works until expires_at)
    created_at: str
    last_used_at: str | None  # to within a minute
    expires_at: str | None
    replaced_by: str | None


class ApiKeyCreated(TypedDict):
    key: ApiKey
    api_key: str  # shown once; the API stores only its hash


class ApiKeyRotated(TypedDict):
    key: ApiKey  # the new key
    api_key: str  # the new key itself, shown once
    previous: ApiKey | None  # the old key and its expires_at; None when revoked at once


class EndpointHealth(TypedDict, total=False):
    state: str  # healthy | failing | disabled
    consecutive_failures: int
    failing_since: str | None
    last_success_at: str | None


class Endpoint(TypedDict, total=False):
    id: str
    url: str
    description: str | None
    method: str
    headers: dict[str, str]
    timeout_ms: int
    retry_policy_id: str | None
    filter_events: list[str]
    active: bool
    disabled_reason: str | None  # "failing" when EdgeCron disabled it
    disable_after_failures: int
    disable_after_sec: int
    max_per_sec: float | None  # deliveries a second at most (null: unlimited)
    max_in_flight: int | None  # deliveries in flight at most (null: unlimited)
    health: EndpointHealth
    created_at: str
    updated_at: str
    secret: str | None  # only in the answers to create and rotate-secret


class RetryPolicy(TypedDict, total=False):
    id: str
    name: str | None
    strategy: str
    max_attempts: int
    base_delay_sec: int
    max_delay_sec: int
    jitter: bool
    created_at: str | None
    updated_at: str | None


class Schedule(TypedDict, total=False):
    id: str
    name: str | None
    cron: str | None
    cron_equivalent: str | None
    at: str | None
    timezone: str
    endpoint_ids: list[str]
    payload: Any
    missed_policy: str
    retry_policy_id: str | None
    status: str
    pause_reason: str | None
    consecutive_failures: int
    next_fire_time: str | None
    last_fire_time: str | None
    start_at: str | None
    end_at: str | None
    jitter_sec: int
    overlap_policy: str  # ALLOW | SKIP | BUFFER_ONE
    finished: bool
    missed_left_out: int
    created_at: str
    updated_at: str
    preview: list[str] | None


class FireRun(TypedDict, total=False):
    id: str
    endpoint_id: str
    status: str
    attempt_count: int
    last_status_code: int | None
    last_error: str | None


class Fire(TypedDict, total=False):
    fire_time: str
    manual: bool
    due_at: str  # fire_time plus the schedule's jitter offset
    status: str  # SCHEDULED | RUNNING | COMPLETED | FAILED | CANCELLED | MISSED | SKIPPED | BUFFERED
    started_at: str | None
    finished_at: str | None
    duration_ms: int | None
    error: str | None
    runs: list[FireRun]


class EventDelivery(TypedDict, total=False):
    endpoint_id: str
    task_run_id: str
    status: str | None
    attempt_count: int
    last_status_code: int | None
    last_error: str | None


class Event(TypedDict, total=False):
    id: str
    name: str
    payload: Any
    idempotency_key: str | None
    fanout_status: str
    fanout_error: str | None
    matched_endpoints: int
    created_at: str
    deliveries: list[EventDelivery]  # GET /v1/events/{id} only
    deliveries_next_cursor: str | None


class TaskRun(TypedDict, total=False):
    id: str
    endpoint_id: str
    source: str
    source_id: str | None
    fire_time: str | None
    status: str
    attempt_count: int
    total_attempts: int
    series: int
    deliver_at: str | None
    next_retry_at: str | None
    last_status_code: int | None
    last_error: str | None
    last_error_kind: str | None
    payload: Any
    created_at: str
    updated_at: str
    finished_at: str | None


class Attempt(TypedDict, total=False):
    attempt_number: int
    series: int
    sequence: int
    request_id: str
    status_code: int | None
    latency_ms: int
    response_summary: str | None
    error: str | None
    error_kind: str | None
    error_detail: str | None
    outcome: str
    trace_id: str | None
    started_at: str


class RecoverResult(TypedDict, total=False):
    recovered: int
    has_more: bool
    next_cursor: str | None


class ReplayResult(TypedDict, total=False):
    replayed: int
    skipped: int
    has_more: bool
    next_cursor: str | None


class Notification(TypedDict, total=False):
    id: str
    kind: str
    title: str
    message: str
    data: Any
    created_at: str


class Usage(TypedDict, total=False):
    month: str
    schedule: int
    event: int
    direct: int
    total: int
    monthly_quota: int | None
