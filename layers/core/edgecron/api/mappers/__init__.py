"""Entity → response model, one module per resource (its routes import it): the only place a
response is shaped (RFC 3339 times, public ids, the vocabulary's members). A module imports the
response models of its resource alone, so a request loads no other resource's schemas."""

from __future__ import annotations

from typing import Any

from edgecron.domain.vocabulary import ErrorKind


def optional_int(value: Any) -> int | None:
    return int(value) if value is not None else None


def error_kind(value: Any) -> ErrorKind | None:
    return ErrorKind(value) if value else None
