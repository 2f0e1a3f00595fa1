"""boto3 clients, created once per process (they honour AWS_ENDPOINT_URL, so the local stack works)."""

from __future__ import annotations

import os
from contextvars import ContextVar
from functools import cache
from typing import Any

import boto3
from botocore.config import Config

from edgecron.config import get_settings

# The function whose calls these are. Lambda runs one function per process (AWS_LAMBDA_FUNCTION_NAME);
# a host that runs several functions in one process names the function of each invocation here.
calling_function: ContextVar[str] = ContextVar("calling_function", default="")

_CONFIG = Config(retries={"max_attempts": 4, "mode": "standard"}, connect_timeout=3, read_timeout=10)


@cache
def client(service: str) -> Any:
    return boto3.session.Session().client(service, region_name=get_settings().region, config=_CONFIG)


def caller() -> str:
    """The function making the calls: caches of what a call returned are kept per caller, because
    each function has its own role and must not reuse what another function was allowed to read."""
    return calling_function.get() or os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
