"""Apps (tenants)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from edgecron.domain.vocabulary import KeyRole
from edgecron.schemas.common import Name, Strict


class AppCreate(Strict):
    name: Name
    monthly_quota: int | None = Field(
        default=None,
        ge=1,
        le=10**12,
        description="billable triggers per calendar month (UTC); none = unlimited",
    )


class AppOut(BaseModel):
    id: str
    name: str
    monthly_quota: int | None
    created_at: str


class AppCreated(BaseModel):
    app: AppOut
    api_key: str = Field(description="shown once; stored only as a hash")


class AccountOut(BaseModel):
    role: KeyRole = Field(description="admin: the operator's admin key; app: an App API key")
    app_id: str | None = Field(description="the App of an App key; null for the admin key")
