"""Shared field types and limits."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MAX_PAYLOAD_BYTES = 200 * 1024  # fits one SQS message (256 KiB) with the envelope

Name = Annotated[str, StringConstraints(min_length=1, max_length=128, strip_whitespace=True)]
Description = Annotated[str, StringConstraints(max_length=512)]
Id = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[a-z]+_[0-9A-Za-z]+$")]
JsonPayload = Any


class Strict(BaseModel):
    """Unknown fields are an error, so a typo never silently does nothing."""

    model_config = ConfigDict(extra="forbid")


class Page(BaseModel):
    next_cursor: str | None = Field(description="pass as ?cursor= to get the next page; null at the end")
