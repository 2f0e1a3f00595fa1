"""Endpoints: where EdgeCron delivers."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, StrictBool, StringConstraints, field_validator

from edgecron.schemas.common import Description, Id, Page, Strict

Method = Literal["POST", "PUT", "PATCH", "GET", "DELETE"]
MAX_URL = 2048
MAX_HEADERS = 20
MAX_HEADER_BYTES = 4096
FORBIDDEN_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "user-agent"}
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
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
    if value is None:
        return value
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    total = 0
    for name, val in value.items():
        if not _HEADER_NAME.match(name):
            raise ValueError(f"invalid header name {name!r}")
        lower = name.lower()
        if lower in FORBIDDEN_HEADERS or lower.startswith("webhook-"):
            raise ValueError(f"header {name!r} is set by EdgeCron and cannot be overridden")
        if "\r" in val or "\n" in val or len(val) > 1024:
            raise ValueError(f"invalid value for header {name!r}")
        total += len(name) + len(val)
    if total > MAX_HEADER_BYTES:
        raise ValueError(f"headers exceed {MAX_HEADER_BYTES} bytes")
    return value


Headers = Annotated[dict[str, str], AfterValidator(_check_headers)]
TimeoutMs = Annotated[int, Field(ge=100, le=25_000, description="per-attempt timeout in milliseconds")]


class EndpointCreate(Strict):
    url: Url
    description: Description | None = None
    method: Method = "POST"
    headers: Headers = Field(default_factory=dict)
    timeout_ms: TimeoutMs = 10_000
    retry_policy_id: Id | None = None
    filter_events: list[EventPattern] = Field(
        default_factory=list,
        max_length=50,
        description="event names or patterns (invoice.*, *); empty = none",
    )
    active: StrictBool = True

    @field_validator("filter_events")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class EndpointUpdate(Strict):
    url: Url | None = None
    description: Description | None = None
    method: Method | None = None
    headers: Headers | None = None
    timeout_ms: TimeoutMs | None = None
    retry_policy_id: Id | None = None
    filter_events: list[EventPattern] | None = Field(default=None, max_length=50)
    active: StrictBool | None = None


class EndpointOut(BaseModel):
    id: str
    url: str
    description: str | None
    method: str
    headers: dict[str, str]
    timeout_ms: int
    retry_policy_id: str | None
    filter_events: list[str]
    active: bool
    created_at: str
    updated_at: str


class EndpointWithSecret(EndpointOut):
    secret: str = Field(description="whsec_… signing secret; shown only at create and rotate")


class EndpointPage(Page):
    data: list[EndpointOut]
