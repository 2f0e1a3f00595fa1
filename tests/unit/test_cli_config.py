"""The CLI's configuration lookup: flags, then EDGECRON_* variables, then the nearest .edgecron/local.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgecron_cli.config import ConfigError, find_local_json, resolve

LOCAL = {
    "api_url": "http://127.0.0.1:3000",
    "api_key": "ek_local",
    "admin_key": "admin_local",
    "aws_endpoint_url": "http://127.0.0.1:4567",
    "app_id": "app_1",
}


def write_local(root: Path, data: object = None) -> Path:
    path = root / ".edgecron" / "local.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(LOCAL if data is None else data))
    return path


def test_local_json_alone_configures_everything(tmp_path: Path) -> None:
    path = write_local(tmp_path)
    settings = resolve(env={}, cwd=tmp_path)
    assert (settings.url, settings.api_key, settings.admin_key) == (
        "http://127.0.0.1:3000",
        "ek_local",
        "admin_local",
    )
    assert settings.url_from == str(path)
    assert settings.require_url() == "http://127.0.0.1:3000"


def test_local_json_is_found_in_a_parent_directory(tmp_path: Path) -> None:
    path = write_local(tmp_path)
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_local_json(deep) == path.resolve()
    assert resolve(env={}, cwd=deep).api_key == "ek_local"


def test_the_nearest_local_json_wins(tmp_path: Path) -> None:
    write_local(tmp_path)
    inner = tmp_path / "project"
    write_local(inner, {**LOCAL, "api_key": "ek_inner"})
    assert resolve(env={}, cwd=inner).api_key == "ek_inner"


def test_environment_overrides_local_json_value_by_value(tmp_path: Path) -> None:
    write_local(tmp_path)
    settings = resolve(env={"EDGECRON_API_KEY": "ek_env"}, cwd=tmp_path)
    assert settings.api_key == "ek_env"
    assert settings.api_key_from == "EDGECRON_API_KEY"
    assert settings.url == "http://127.0.0.1:3000"  # still from local.json
    assert settings.admin_key == "admin_local"


def test_flags_override_environment_and_local_json(tmp_path: Path) -> None:
    write_local(tmp_path)
    env = {
        "EDGECRON_URL": "http://env:1",
        "EDGECRON_API_KEY": "ek_env",
        "EDGECRON_ADMIN_KEY": "admin_env",
    }
    settings = resolve(url="http://flag:2", api_key="ek_flag", admin_key="admin_flag", env=env, cwd=tmp_path)
    assert (settings.url, settings.api_key, settings.admin_key) == ("http://flag:2", "ek_flag", "admin_flag")
    assert settings.url_from == settings.api_key_from == settings.admin_key_from == "flag"


def test_local_json_is_not_read_when_everything_is_given(tmp_path: Path) -> None:
    write_local(tmp_path, "not an object")  # would be an error if read
    env = {"EDGECRON_URL": "http://env:1", "EDGECRON_API_KEY": "k", "EDGECRON_ADMIN_KEY": "a"}
    assert resolve(env=env, cwd=tmp_path).local_json is None


def test_a_trailing_slash_is_dropped(tmp_path: Path) -> None:
    assert resolve(url="http://x:1/", env={}, cwd=tmp_path).require_url() == "http://x:1"


def test_nothing_configured_is_a_clear_error(tmp_path: Path) -> None:
    settings = resolve(env={}, cwd=tmp_path)
    with pytest.raises(ConfigError) as url_error:
        settings.require_url()
    message = str(url_error.value)
    assert "--url" in message and "EDGECRON_URL" in message and "edgecron local" in message
    assert ".edgecron/local.json" in message
    with pytest.raises(ConfigError, match="EDGECRON_API_KEY"):
        settings.require_api_key()
    with pytest.raises(ConfigError, match="EDGECRON_ADMIN_KEY"):
        settings.require_admin_key()


def test_a_local_json_without_the_admin_key_says_so(tmp_path: Path) -> None:
    path = write_local(tmp_path, {"api_url": "http://127.0.0.1:3000", "api_key": "ek_local"})
    settings = resolve(env={}, cwd=tmp_path)
    assert settings.require_api_key() == "ek_local"
    with pytest.raises(ConfigError, match=str(path)):
        settings.require_admin_key()


def test_empty_values_do_not_count(tmp_path: Path) -> None:
    write_local(tmp_path)
    settings = resolve(api_key="", env={"EDGECRON_API_KEY": ""}, cwd=tmp_path)
    assert settings.api_key == "ek_local"


def test_a_broken_local_json_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / ".edgecron" / "local.json"
    path.parent.mkdir()
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read"):
        resolve(env={}, cwd=tmp_path)


def test_messages_never_contain_keys(tmp_path: Path) -> None:
    write_local(tmp_path, {"api_url": "http://127.0.0.1:3000", "api_key": "ek_secret_value"})
    settings = resolve(env={}, cwd=tmp_path)
    with pytest.raises(ConfigError) as error:
        settings.require_admin_key()
    assert "ek_secret_value" not in str(error.value)
