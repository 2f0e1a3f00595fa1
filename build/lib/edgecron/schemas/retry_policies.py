"""Retry Policies."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StrictBool

from edgecron.domain.vocabulary import RetryStrategy
from edgecron.schemas.common import FromText, Name, Page, Strict


class RetryPolicyCreate(Strict):
    name: Name | None = None
    strategy: Annotated[RetryStrategy, FromText] = RetryStrategy.FIXED
    max_attempts: int = Field(default=3, ge=1, le=20, description="including the first attempt")
    base_delay_sec: int = Field(default=300, ge=1, le=86_400)
    max_delay_sec: int = Field(default=3_600, ge=1, le=86_400)
    jitter: StrictBool = False


class RetryPolicyUpdate(Strict):
    name: Name | None = None
    strategy: Annotated[RetryStrategy, FromText] | None = None
    max_attempts: int | None = Field(default=None, ge=1, le=20)
    base_delay_sec: int | None = Field(default=None, ge=1, le=86_400)
    max_delay_sec: int | None = Field(default=None, ge=1, le=86_400)
    jitter: StrictBool | None = None


class RetryPolicyOut(BaseModel):
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
