"""Settings read once, lazily, from the environment the template (or the local stack) gives each function.

One typed model: each field names its environment variable (its alias). Every table name and queue URL
is required, so a function deployed without one fails its cold start naming the variable, instead of
writing to a default table name that does not exist (or, worse, to another stack's table).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

_TRUE = frozenset({"1", "true", "yes"})


class SettingsError(RuntimeError):
    """The environment lacks a required name or holds a bad value; the message names each variable."""


def _name(env: str) -> Any:
    """A required name (table, queue URL): no default, never empty."""
    return Field(alias=env, min_length=1)


class Settings(BaseModel):
    """Validated configuration; a bad or missing value fails the cold start loudly instead of a request later."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    apps_table: str = _name("APPS_TABLE")
    api_keys_table: str = _name("API_KEYS_TABLE")
    endpoints_table: str = _name("ENDPOINTS_TABLE")
    retry_policies_table: str = _name("RETRY_POLICIES_TABLE")
    schedules_table: str = _name("SCHEDULES_TABLE")
    fires_table: str = _name("FIRES_TABLE")
    runs_table: str = _name("RUNS_TABLE")
    # the Task Runs table of earlier releases (key run_id), read and copied while the stack upgrades
    attempts_table: str = _name("ATTEMPTS_TABLE")
    events_table: str = _name("EVENTS_TABLE")
    fanout_pages_table: str = _name("FANOUT_PAGES_TABLE")
    usage_table: str = _name("USAGE_TABLE")
    notifications_table: str = _name("NOTIFICATIONS_TABLE")
    idempotency_table: str = _name("IDEMPOTENCY_TABLE")

    delivery_queue_url: str = _name("DELIVERY_QUEUE_URL")
    retry_queue_url: str = _name("RETRY_QUEUE_URL")
    fanout_queue_url: str = _name("FANOUT_QUEUE_URL")
    delivery_dlq_url: str = _name("DELIVERY_DLQ_URL")
    # Optional: without a topic no alert is published, without a key secrets are stored unencrypted,
    # without the admin secret no admin key is accepted.
    alerts_topic_arn: str = Field(default="", alias="ALERTS_TOPIC_ARN")
    admin_key_secret_arn: str = Field(default="", alias="ADMIN_KEY_SECRET_ARN")
    secrets_kms_key_id: str = Field(default="", alias="SECRETS_KMS_KEY_ID")

    region: str = Field(
        default="us-east-1", validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION")
    )
    shards: int = Field(default=8, ge=1, le=64, alias="SHARDS")
    lookahead_sec: int = Field(default=70, ge=0, le=600, alias="LOOKAHEAD_SEC")
    redispatch_after_sec: int = Field(default=300, ge=10, le=86_400, alias="REDISPATCH_AFTER_SEC")
    claim_sec: int = Field(default=60, ge=5, le=3_600, alias="CLAIM_SEC")
    history_ttl_days: int = Field(default=90, ge=1, le=3_650, alias="HISTORY_TTL_DAYS")
    allow_http: bool = Field(default=False, alias="ALLOW_HTTP")
    allowed_cidrs: list[str] = Field(default_factory=list, alias="ALLOWED_CIDRS")
    # reach ALLOWED_CIDRS and nothing else (the local stack: loopback only)
    allowed_only: bool = Field(default=False, alias="ALLOWED_ONLY")
    # the scan's due walk advances a schedule whose due slot stays in place, without a write; false
    # before a rollback to a release that reads only the stored next fire time (docs/upgrade.md)
    due_walk_advances: bool = Field(default=True, alias="DUE_WALK_ADVANCES")

    @field_validator("allow_http", "allowed_only", "due_walk_advances", mode="before")
    @classmethod
    def _flag(cls, value: object) -> object:
        return value.strip().lower() in _TRUE if isinstance(value, str) else value

    @field_validator("allowed_cidrs", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("allowed_cidrs")
    @classmethod
    def _valid_cidrs(cls, value: list[str]) -> list[str]:
        for cidr in value:
            ipaddress.ip_network(cidr, strict=False)
        return value

    @property
    def lookahead_ms(self) -> int:
        """How far ahead of now fires and due runs are dispatched (SQS delays land them on time)."""
        return self.lookahead_sec * 1000

    @property
    def redispatch_after_ms(self) -> int:
        """How long past its due time a sent run's message may be lost before the scan sends it again."""
        return self.redispatch_after_sec * 1000


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from an environment mapping (os.environ by default); an empty variable counts as
    unset. Raises SettingsError naming every missing or invalid variable."""
    source = os.environ if env is None else env
    raw = {name: value for name, value in source.items() if value != ""}
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    missing: list[str] = []
    invalid: list[str] = []
    for error in exc.errors(include_url=False, include_input=False):
        name = ".".join(str(part) for part in error["loc"]) or "?"
        if error["type"] == "missing":
            missing.append(name)
        else:
            invalid.append(f"{name}: {error['msg']}")
    parts = []
    if missing:
        parts.append("missing environment variable(s) " + ", ".join(missing))
    if invalid:
        parts.append("invalid " + "; ".join(invalid))
    return "EdgeCron settings: " + "; ".join(parts) + " (template.yaml's Globals set them for every function)"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read on first use (never at import) and then kept."""
    return settings_from_env()
