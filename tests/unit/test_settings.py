"""The settings model: every table name and queue URL is required, read once and only when first used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edgecron.config import Settings, SettingsError, settings_from_env

ROOT = Path(__file__).resolve().parents[2]

NAMES = {
    "APPS_TABLE": "t-apps",
    "API_KEYS_TABLE": "t-keys",
    "ENDPOINTS_TABLE": "t-endpoints",
    "RETRY_POLICIES_TABLE": "t-policies",
    "SCHEDULES_TABLE": "t-schedules",
    "FIRES_TABLE": "t-fires",
    "RUNS_TABLE": "t-runs",
    "ATTEMPTS_TABLE": "t-attempts",
    "EVENTS_TABLE": "t-events",
    "FANOUT_PAGES_TABLE": "t-pages",
    "USAGE_TABLE": "t-usage",
    "NOTIFICATIONS_TABLE": "t-notifications",
    "IDEMPOTENCY_TABLE": "t-idempotency",
    "DELIVERY_QUEUE_URL": "http://q/delivery",
    "RETRY_QUEUE_URL": "http://q/retry",
    "FANOUT_QUEUE_URL": "http://q/fanout",
    "DELIVERY_DLQ_URL": "http://q/dlq",
}


def test_every_name_is_read_from_its_variable() -> None:
    settings = settings_from_env({**NAMES, "AWS_REGION": "eu-west-1", "SHARDS": "16", "ALLOW_HTTP": "true"})
    assert settings.apps_table == "t-apps"
    assert settings.delivery_dlq_url == "http://q/dlq"
    assert (settings.region, settings.shards, settings.allow_http) == ("eu-west-1", 16, True)


@pytest.mark.parametrize("variable", ["RUNS_TABLE", "DELIVERY_QUEUE_URL", "IDEMPOTENCY_TABLE"])
def test_a_missing_name_fails_with_a_message_naming_the_variable(variable: str) -> None:
    env = {k: v for k, v in NAMES.items() if k != variable}
    with pytest.raises(SettingsError, match=rf"missing environment variable\(s\) {variable}\b"):
        settings_from_env(env)


def test_an_empty_name_counts_as_missing() -> None:
    with pytest.raises(SettingsError, match="missing environment variable\\(s\\) FIRES_TABLE"):
        settings_from_env({**NAMES, "FIRES_TABLE": ""})


def test_a_bad_value_names_its_variable() -> None:
    with pytest.raises(SettingsError, match="invalid SHARDS"):
        settings_from_env({**NAMES, "SHARDS": "0"})


def test_tuning_values_keep_their_defaults_and_lists_are_split() -> None:
    settings = settings_from_env({**NAMES, "ALLOWED_CIDRS": "10.0.0.0/8, 127.0.0.0/8", "LOOKAHEAD_SEC": ""})
    assert settings.allowed_cidrs == ["10.0.0.0/8", "127.0.0.0/8"]
    assert (settings.lookahead_sec, settings.claim_sec, settings.allow_http, settings.alerts_topic_arn) == (
        70,
        60,
        False,
        "",
    )


def test_the_model_can_be_built_by_field_name() -> None:
    fields = {name: value for name, value in Settings.model_fields.items() if value.is_required()}
    assert Settings(**dict.fromkeys(fields, "x")).apps_table == "x"  # type: ignore[arg-type]


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "layers" / "core"), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importing_the_data_layer_and_the_api_reads_no_settings() -> None:
    """No table name is bound at import: a process without the variables imports every module."""
    code = (
        "import edgecron.data.models, edgecron.api.resolver\n"
        "from edgecron.config import get_settings\n"
        "assert get_settings.cache_info().currsize == 0, 'settings read at import'\n"
        "print('ok')"
    )
    result = _python(code, {})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_first_use_of_a_table_without_its_variable_fails_naming_it() -> None:
    code = "from edgecron.data.models import TaskRunModel\nTaskRunModel.describe_table()"
    env = {k: v for k, v in NAMES.items() if k != "RUNS_TABLE"}
    result = _python(code, {**env, "AWS_DEFAULT_REGION": "us-east-1"})
    assert result.returncode != 0
    assert "SettingsError" in result.stderr
    assert "missing environment variable(s) RUNS_TABLE" in result.stderr


def test_tables_take_their_names_from_the_settings_when_first_used() -> None:
    code = (
        "from edgecron.data.models import FireModel, TaskRunModel\n"
        "print(TaskRunModel.Meta.table_name, FireModel.Meta.table_name, TaskRunModel.Meta.region)"
    )
    result = _python(code, {**NAMES, "AWS_REGION": "eu-central-1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["t-runs", "t-fires", "eu-central-1"]
