"""Settings read once from the environment the template (or the local stack) gives each function."""

from __future__ import annotations

import ipaddress
import os
from functools import lru_cache

from pydantic import BaseModel, Field, field_validator

_TABLE_ENV = {
    "apps_table": "APPS_TABLE",
    "api_keys_table": "API_KEYS_TABLE",
    "endpoints_table": "ENDPOINTS_TABLE",
    "retry_policies_table": "RETRY_POLICIES_TABLE",
    "schedules_table": "SCHEDULES_TABLE",
    "fires_table": "FIRES_TABLE",
    "task_runs_table": "TASK_RUNS_TABLE",
    "attempts_table": "ATTEMPTS_TABLE",
    "events_table": "EVENTS_TABLE",
    "fanout_pages_table": "FANOUT_PAGES_TABLE",
    "usage_table": "USAGE_TABLE",
    "notifications_table": "NOTIFICATIONS_TABLE",
    "idempotency_table": "IDEMPOTENCY_TABLE",
}


class Settings(BaseModel):
    """Validated configuration; a bad value fails the cold start loudly instead of a request later."""

    apps_table: str = "edgecron-apps"
    api_keys_table: str = "edgecron-api-keys"
    endpoints_table: str = "edgecron-endpoints"
    retry_policies_table: str = "edgecron-retry-policies"
    schedules_table: str = "edgecron-schedules"
    fires_table: str = "edgecron-fires"
    task_runs_table: str = "edgecron-task-runs"
    attempts_table: str = "edgecron-attempts"
    events_table: str = "edgecron-events"
    fanout_pages_table: str = "edgecron-fanout-pages"
    usage_table: str = "edgecron-usage"
    notifications_table: str = "edgecron-notifications"
    idempotency_table: str = "edgecron-idempotency"

    delivery_queue_url: str = ""
    retry_queue_url: str = ""
    fanout_queue_url: str = ""
    delivery_dlq_url: str = ""
    alerts_topic_arn: str = ""
    admin_key_secret_arn: str = ""
    secrets_kms_key_id: str = ""

    region: str = "us-east-1"
    shards: int = Field(default=8, ge=1, le=64)
    lookahead_sec: int = Field(default=70, ge=0, le=600)
    redispatch_after_sec: int = Field(default=300, ge=10, le=86_400)
    claim_sec: int = Field(default=60, ge=5, le=3_600)
    history_ttl_days: int = Field(default=90, ge=1, le=3_650)
    allow_http: bool = False
    allowed_cidrs: list[str] = Field(default_factory=list)
    allowed_only: bool = False  # reach ALLOWED_CIDRS and nothing else (the local stack: loopback only)

    @field_validator("allowed_cidrs")
    @classmethod
    def _valid_cidrs(cls, value: list[str]) -> list[str]:
        for cidr in value:
            ipaddress.ip_network(cidr, strict=False)
        return value


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def settings_from_env(env: dict[str, str] | None = None) -> Settings:
    """Build Settings from an environment mapping (os.environ by default)."""
    env = dict(os.environ if env is None else env)
    raw: dict[str, object] = {field: env[var] for field, var in _TABLE_ENV.items() if env.get(var)}
    for field, var in {
        "delivery_queue_url": "DELIVERY_QUEUE_URL",
        "retry_queue_url": "RETRY_QUEUE_URL",
        "fanout_queue_url": "FANOUT_QUEUE_URL",
        "delivery_dlq_url": "DELIVERY_DLQ_URL",
        "alerts_topic_arn": "ALERTS_TOPIC_ARN",
        "admin_key_secret_arn": "ADMIN_KEY_SECRET_ARN",
        "secrets_kms_key_id": "SECRETS_KMS_KEY_ID",
        "shards": "SHARDS",
        "lookahead_sec": "LOOKAHEAD_SEC",
        "redispatch_after_sec": "REDISPATCH_AFTER_SEC",
        "claim_sec": "CLAIM_SEC",
        "history_ttl_days": "HISTORY_TTL_DAYS",
    }.items():
        if env.get(var):
            raw[field] = env[var]
    raw["region"] = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    raw["allow_http"] = env.get("ALLOW_HTTP", "").lower() in {"1", "true", "yes"}
    raw["allowed_cidrs"] = _split(env.get("ALLOWED_CIDRS", ""))
    raw["allowed_only"] = env.get("ALLOWED_ONLY", "").lower() in {"1", "true", "yes"}
    return Settings.model_validate(raw)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return settings_from_env()
