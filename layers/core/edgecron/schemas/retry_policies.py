"""Retry Policies."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool

from edgecron.domain.vocabulary import RetryStrategy
from edgecron.schemas.common import FromText, Model, Name, NotNull, Page, Strict, unchanged


class RetryPolicyCreate(Strict):
    name: Name | None = None
    strategy: Annotated[RetryStrategy, FromText] = RetryStrategy.FIXED
    max_attempts: int = Field(default=3, ge=1, le=20, description="including the first attempt")
    base_delay_sec: int = Field(default=300, ge=1, le=86_400)
    max_delay_sec: int = Field(default=3_600, ge=1, le=86_400)
    jitter: StrictBool = False


class RetryPolicyUpdate(Strict):
    """Only the fields given change. `name: null` clears the name; the other fields cannot be null."""

    name: Name | None = Field(default=None, description="null clears the name")
    strategy: Annotated[RetryStrategy, FromText] | NotNull = unchanged()
    max_attempts: Annotated[int, Field(ge=1, le=20)] | NotNull = unchanged("including the first attempt")
    base_delay_sec: Annotated[int, Field(ge=1, le=86_400)] | NotNull = unchanged()
    max_delay_sec: Annotated[int, Field(ge=1, le=86_400)] | NotNull = unchanged()
    jitter: StrictBool | NotNull = unchanged()


class RetryPolicyOut(Model):
    id: str
    name: str | None
    strategy: RetryStrategy
    max_attempts: int
    base_delay_sec: int
    max_delay_sec: int
    jitter: bool
    created_at: str | None
    updated_at: str | None


class RetryPolicyPage(Page[RetryPolicyOut]):
    pass
