"""Shared field types and limits."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
)
from pydantic import Strict as PydanticStrict
from pydantic.json_schema import SkipJsonSchema

MAX_PAYLOAD_BYTES = 200 * 1024  # fits one SQS message (256 KiB) with the envelope
MAX_BODY_BYTES = 1024 * 1024  # a whole request body; a payload over its own limit still gets a 413 naming it
MAX_JSON_DEPTH = 64  # nesting levels of a request body (its payload: 63); parsers recurse per level

Name = Annotated[str, StringConstraints(min_length=1, max_length=128, strip_whitespace=True)]
Description = Annotated[str, StringConstraints(max_length=512)]
Id = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[a-z]+_[0-9A-Za-z]+$")]
JsonPayload = Any
# An enum field takes the member's text from JSON: strict mode would accept only a Python member.
FromText = PydanticStrict(False)


class Model(BaseModel):
    """A model of the HTTP API. Its validator and serializer are built when it is first used
    (`defer_build`), not when its module is imported: the API function builds the models of the routes
    its requests reach, and a function that imports a schema module for a limit or a type never
    builds models it does not validate."""

    model_config = ConfigDict(defer_build=True)


class Strict(Model):
    """Unknown fields are an error, so a typo never silently does nothing; types are strict, so
    `true` is not the integer 1 and `"5"` or `5.0` is not the integer 5."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Page[Item](Model):
    """One page of a list: its items, and where the next page starts."""

    data: list[Item]
    next_cursor: str | None = Field(description="pass as ?cursor= to get the next page; null at the end")


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _rfc3339_text(value: object) -> object:
    """Times are RFC 3339 strings; pydantic would also take a bare number as a Unix time."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _RFC3339.match(value):
        raise ValueError("must be an RFC 3339 date-time with an offset, e.g. 2030-01-01T09:00:00Z")
    return value


EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)  # the engine counts epoch milliseconds from here
LATEST_TIME = datetime(3000, 1, 1, tzinfo=UTC)  # and computes fire times no further than this


def _computable(value: datetime) -> datetime:
    """A time the engine can compute with: in UTC between EARLIEST_TIME and LATEST_TIME (year 1 at a
    positive offset is year 0 in UTC, which no date type holds)."""
    try:
        utc = value.astimezone(UTC)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not EARLIEST_TIME <= utc < LATEST_TIME:
        raise ValueError("must lie between 1970-01-01T00:00:00Z and 3000-01-01T00:00:00Z")
    return value


# Times arrive as JSON strings: strict mode would refuse every string, so the RFC 3339 check above
# is the strict part and pydantic then parses the text it let through.
Rfc3339 = Annotated[
    AwareDatetime, BeforeValidator(_rfc3339_text), AfterValidator(_computable), PydanticStrict(False)
]


#: The null a PATCH field may not be set to: the field may be left out (it stays as it is), but the
#: OpenAPI document does not offer null, and the service answers 400 "<field> cannot be null".
NotNull = SkipJsonSchema[None]


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def unchanged(description: str | None = None, **constraints: Any) -> Any:
    """A PATCH field that is left as it is when the request leaves it out (no default in the document)."""
    return Field(default=None, description=description, json_schema_extra=_no_default, **constraints)
