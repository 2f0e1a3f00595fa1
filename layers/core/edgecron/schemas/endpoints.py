"""Endpoints: where EdgeCron delivers."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StringConstraints,
    ValidationError,
    field_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from edgecron.domain.endpoint_health import (
    DEFAULT_DISABLE_AFTER_FAILURES,
    DEFAULT_DISABLE_AFTER_SEC,
    MAX_DISABLE_AFTER_FAILURES,
    MAX_DISABLE_AFTER_SEC,
)
from edgecron.domain.flow_control import MAX_IN_FLIGHT, MAX_PER_SEC, MIN_PER_SEC
from edgecron.domain.http_headers import header_problem
from edgecron.domain.vocabulary import DisabledReason, HealthState, HttpMethod
from edgecron.schemas.common import (
    Description,
    FromText,
    Id,
    Model,
    NotNull,
    Page,
    Rfc3339,
    Strict,
    unchanged,
)

MAX_URL = 2048
MAX_HEADERS = 20
MAX_HEADER_BYTES = 4096
MAX_HEADER_NAME = 128
MAX_HEADER_VALUE = 1024
_EVENT_PATTERN = re.compile(r"^(\*|[A-Za-z0-9_-]+(\.([A-Za-z0-9_-]+|\*))*)$")


def _check_url(value: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError("must be an absolute http(s) URL")
    if parts.username or parts.password:
        raise ValueError("must not carry credentials")
    return value


Url = Annotated[str, StringConstraints(min_length=1, max_length=MAX_URL), AfterValidator(_check_url)]
EventPattern = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=_EVENT_PATTERN.pattern)]


def _check_headers(value: dict[str, str] | None) -> dict[str, str] | None:
    """Each header must be sendable as given (domain/http_headers.py); the error names it."""
    if value is None:
        return value
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    total = 0
    for name, val in value.items():
        problem = header_problem(name, val)
        if problem is None and (len(name) > MAX_HEADER_NAME or len(val) > MAX_HEADER_VALUE):
            problem = f"header names are at most {MAX_HEADER_NAME} and values {MAX_HEADER_VALUE} characters"
        if problem is not None:
            error = InitErrorDetails(
                type=PydanticCustomError("header_invalid", problem), loc=(name,), input=val
            )
            raise ValidationError.from_exception_data("headers", [error])
        total += len(name) + len(val)
    if total > MAX_HEADER_BYTES:
        raise ValueError(f"headers exceed {MAX_HEADER_BYTES} bytes")
    return value


Headers = Annotated[dict[str, str], AfterValidator(_check_headers)]
TimeoutMs = Annotated[int, Field(ge=100, le=25_000, description="per-attempt timeout in milliseconds")]
DisableAfterFailures = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_DISABLE_AFTER_FAILURES,
        description="disable the Endpoint after this many failed runs in a row (0 = never) ...",
    ),
]
DisableAfterSec = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_DISABLE_AFTER_SEC,
        description="... once at least this many seconds passed since the first of them",
    ),
]

MaxPerSec = Annotated[
    float,
    Field(
        ge=MIN_PER_SEC,
        le=MAX_PER_SEC,
        allow_inf_nan=False,
        description="at most this many deliveries a second, across every worker (null = unlimited)",
    ),
]
MaxInFlight = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_IN_FLIGHT,
        description="at most this many deliveries waiting for the receiver's answer at once (null = unlimited)",
    ),
]


class EndpointCreate(Strict):
    url: Url
    description: Description | None = None
    method: Annotated[HttpMethod, FromText] = HttpMethod.POST
    headers: Headers = Field(default_factory=dict)
    timeout_ms: TimeoutMs = 10_000
    retry_policy_id: Id | None = None
    filter_events: list[EventPattern] = Field(
        default_factory=list,
        max_length=50,
        description="event names or patterns (invoice.*, *; edgecron.* for EdgeCron's own events, which * does not match); empty = none",
    )
    active: StrictBool = True
    disable_after_failures: DisableAfterFailures = DEFAULT_DISABLE_AFTER_FAILURES
    disable_after_sec: DisableAfterSec = DEFAULT_DISABLE_AFTER_SEC
    max_per_sec: MaxPerSec | None = None
    max_in_flight: MaxInFlight | None = None

    @field_validator("filter_events")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class EndpointUpdate(Strict):
    """Only the fields given change. Null clears `description`, sets `retry_policy_id` back to the
    default policy and removes the `max_per_sec` and `max_in_flight` limits; the other fields cannot be
    null (give `headers: {}` or `filter_events: []` to empty them)."""

    url: Url | NotNull = unchanged()
    description: Description | None = Field(default=None, description="null clears the description")
    method: Annotated[HttpMethod, FromText] | NotNull = unchanged()
    headers: Headers | NotNull = unchanged("replaces every custom header; {} removes them all")
    timeout_ms: TimeoutMs | NotNull = unchanged()
    retry_policy_id: Id | None = Field(default=None, description="null: the default retry policy")
    filter_events: Annotated[list[EventPattern], Field(max_length=50)] | NotNull = unchanged(
        "replaces the patterns; [] receives no events"
    )
    active: StrictBool | NotNull = unchanged(
        "true re-enables a disabled Endpoint and starts its health afresh"
    )
    disable_after_failures: DisableAfterFailures | NotNull = unchanged()
    disable_after_sec: DisableAfterSec | NotNull = unchanged()
    max_per_sec: MaxPerSec | None = Field(default=None, description="null removes the rate limit")
    max_in_flight: MaxInFlight | None = Field(default=None, description="null removes the limit")


class EndpointHealthOut(Model):
    state: HealthState
    consecutive_failures: int = Field(description="failed or dead-lettered runs in a row")
    failing_since: str | None = Field(description="when the first run of the failing streak ended")
    last_success_at: str | None = Field(description="the last successful run, to the minute")


class EndpointOut(Model):
    id: str
    url: str
    description: str | None
    method: HttpMethod
    headers: dict[str, str]
    timeout_ms: int
    retry_policy_id: str | None
    filter_events: list[str]
    active: bool
    disabled_reason: DisabledReason | None = Field(description="why EdgeCron disabled it (null: it did not)")
    disable_after_failures: int
    disable_after_sec: int
    max_per_sec: float | None = Field(description="deliveries a second at most (null: unlimited)")
    max_in_flight: int | None = Field(description="deliveries in flight at most (null: unlimited)")
    health: EndpointHealthOut
    created_at: str
    updated_at: str


class EndpointWithSecret(EndpointOut):
    secret: str | None = Field(
        default=None,
        exclude_if=lambda secret: secret is None,
        description="whsec_… signing secret, shown in one response only: the create's (absent when "
        "an Idempotency-Key replays it) or the rotation's",
    )


class EndpointPage(Page[EndpointOut]):
    pass


class RecoverRequest(Strict):
    since: Rfc3339 = Field(description="re-send runs that ended failed or dead_letter at or after this time")
    until: Rfc3339 | None = Field(default=None, description="... and at or before this one (default: now)")
    cursor: str | None = Field(
        default=None, max_length=2048, description="next_cursor of the previous call: resume after it"
    )


class RecoverResult(Model):
    recovered: int = Field(description="runs re-sent by this call, each as a new attempt series")
    has_more: bool = Field(description="more runs may match: call again with next_cursor")
    next_cursor: str | None = Field(default=None, description="where the next call resumes")
