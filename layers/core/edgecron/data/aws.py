"""boto3 clients, created once per process (they honour AWS_ENDPOINT_URL, so the local stack works)."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from botocore.config import Config

from edgecron.config import get_settings

_CONFIG = Config(retries={"max_attempts": 4, "mode": "standard"}, connect_timeout=3, read_timeout=10)


@cache
def client(service: str) -> Any:
    return boto3.session.Session().client(service, region_name=get_settings().region, config=_CONFIG)


def reset_clients() -> None:
    """Forget cached clients (tests switch between moto contexts)."""
    client.cache_clear()
