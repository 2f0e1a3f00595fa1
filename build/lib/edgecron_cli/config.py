"""Where the CLI finds its API URL and keys: flags, then environment, then `.edgecron/local.json`.

Each value is looked up on its own, so `EDGECRON_API_KEY` can override one key of a local.json that
still supplies the URL. local.json is what `edgecron local` writes, so right after starting the local
stack every command works with no flags.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

LOCAL_JSON = Path(".edgecron") / "local.json"
ENV_URL = "EDGECRON_URL"
ENV_API_KEY = "EDGECRON_API_KEY"
ENV_ADMIN_KEY = "EDGECRON_ADMIN_KEY"


class ConfigError(Exception):
    """Nothing tells the CLI where the API is or which key to use (exit code 2)."""


@dataclass(frozen=True)
class Settings:
    """The resolved configuration; `*_from` say where a value came from (for error messages, never keys)."""

    url: str | None
    api_key: str | None
    admin_key: str | None
    url_from: str | None = None
    api_key_from: str | None = None
    admin_key_from: str | None = None
    local_json: Path | None = None

    def require_url(self) -> str:
        if not self.url:
            raise ConfigError(_missing("the API URL", "--url", ENV_URL, self.local_json))
        return self.url.rstrip("/")

    def require_api_key(self) -> str:
        if not self.api_key:
            raise ConfigError(_missing("the App API key", "--api-key", ENV_API_KEY, self.local_json))
        return self.api_key

    def require_admin_key(self) -> str:
        if not self.admin_key:
            raise ConfigError(_missing("the admin key", "--admin-key", ENV_ADMIN_KEY, self.local_json))
        return self.admin_key


def _missing(what: str, flag: str, env: str, local_json: Path | None) -> str:
    where = f"{local_json} has no such value" if local_json else f"no {LOCAL_JSON} in this directory or above"
    return (
        f"{what} is not configured: pass {flag}, set {env}, or start the local stack "
        f"(`edgecron local`) and run from its directory ({where})"
    )


def find_local_json(start: Path) -> Path | None:
    """The nearest `.edgecron/local.json` in `start` or one of its parents."""
    start = start.resolve()
    for directory in (start, *start.parents):
        candidate = directory / LOCAL_JSON
        if candidate.is_file():
            return candidate
    return None


def read_local_json(path: Path) -> dict[str, str]:
    """The string values of local.json; a broken file is a ConfigError, not a traceback."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} is not a JSON object")
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str) and v}


def resolve(
    *,
    url: str | None = None,
    api_key: str | None = None,
    admin_key: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Flags win over the environment, which wins over local.json (read only if something is missing)."""
    env = os.environ if env is None else env
    found: dict[str, tuple[str | None, str | None]] = {}
    for name, flag_value, env_name in (
        ("url", url, ENV_URL),
        ("api_key", api_key, ENV_API_KEY),
        ("admin_key", admin_key, ENV_ADMIN_KEY),
    ):
        if flag_value:
            found[name] = (flag_value, "flag")
        elif env.get(env_name):
            found[name] = (env[env_name], env_name)
        else:
            found[name] = (None, None)
    local_path: Path | None = None
    if any(value is None for value, _ in found.values()):
        local_path = find_local_json(cwd or Path.cwd())
        if local_path is not None:
            local = read_local_json(local_path)
            for name, key in (("url", "api_url"), ("api_key", "api_key"), ("admin_key", "admin_key")):
                if found[name][0] is None and key in local:
                    found[name] = (local[key], str(local_path))
    return Settings(
        url=found["url"][0],
        api_key=found["api_key"][0],
        admin_key=found["admin_key"][0],
        url_from=found["url"][1],
        api_key_from=found["api_key"][1],
        admin_key_from=found["admin_key"][1],
        local_json=local_path,
    )
