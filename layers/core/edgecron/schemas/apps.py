"""Apps (tenants)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from edgecron.domain.api_keys import DEFAULT_GRACE_SEC, MAX_GRACE_SEC
from edgecron.domain.vocabulary import KeyRole
from edgecron.schemas.common import Model, Name, Page, Strict


class AppCreate(Strict):
    name: Name
    monthly_quota: int | None = Field(
        default=None,
        ge=1,
        le=10**12,
        description="billable triggers per calendar month (UTC); none = unlimited",
    )


class AppOut(Model):
    id: str
    name: str
    monthly_quota: int | None
    created_at: str


class AppCreated(Model):
    app: AppOut
    api_key: str = Field(description="shown once; stored only as a hash")


class AccountOut(Model):
    role: KeyRole = Field(description="admin: the operator's admin key; app: an App API key")
    app_id: str | None = Field(description="the App of an App key; null for the admin key")


class AppPage(Page[AppOut]):
    pass


class KeyCreate(Strict):
    name: Name | None = Field(default=None, description="what the key is for, e.g. 'billing-service'")


class KeyRotate(Strict):
    grace_period_sec: int = Field(
        default=DEFAULT_GRACE_SEC,
        ge=0,
        le=MAX_GRACE_SEC,
        description="how long the old key keeps working, in seconds (default 86400 = 24 h; 0 = refused at once)",
    )


class KeyOut(Model):
    id: str = Field(description="names the key in these routes; the key itself is never shown again")
    prefix: str = Field(description="the key's first characters, to recognise it")
    name: str | None
    state: Literal["active", "expiring"] = Field(description="expiring: rotated, works until expires_at")
    created_at: str
    last_used_at: str | None = Field(description="the last request that carried it, to about a minute")
    expires_at: str | None = Field(description="when a rotated key stops working; null for an active key")
    replaced_by: str | None = Field(description="the id of the key that replaced it")


class KeyPage(Page[KeyOut]):
    pass


class KeyCreated(Model):
    key: KeyOut
    api_key: str = Field(description="shown once; stored only as a hash")


class KeyRotated(Model):
    key: KeyOut = Field(description="the new key")
    api_key: str = Field(description="the new key, shown once; stored only as a hash")
    previous: KeyOut | None = Field(
        description="the old key and when it stops working; null when revoked at once"
    )
