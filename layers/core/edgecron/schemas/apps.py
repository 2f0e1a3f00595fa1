"""Apps (tenants)."""

from __future__ import annotations

from pydantic import BaseModel, Field

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
