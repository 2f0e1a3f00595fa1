"""AWS clients, created once per process (they honour AWS_ENDPOINT_URL, so the local stack works).

They are botocore's: the product calls services through clients only (no boto3 resources, no S3
transfers), and pynamodb is built on botocore too, so no function imports boto3, whose import (with
s3transfer's, which it loads eagerly) every cold start would pay on top of botocore's."""

from __future__ import annotations

import os
from contextvars import ContextVar
from functools import cache
from typing import Any

import botocore.session
from botocore.config import Config

from edgecron.config import get_settings

# The function whose calls these are. Lambda runs one function per process (AWS_LAMBDA_FUNCTION_NAME);
# a host that runs several functions in one process names the function of each invocation here.
calling_function: ContextVar[str] = ContextVar("calling_function", default="")

_CONFIG = Config(retries={"max_attempts": 4, "mode": "standard"}, connect_timeout=3, read_timeout=10)


@cache
def client(service: str) -> Any:
    # A session of its own per client, as a boto3 Session would make: sessions are not thread-safe,
    # and the worker's threads may create clients at the same time.
    session = botocore.session.Session()
    return session.create_client(service, region_name=get_settings().region, config=_CONFIG)


def caller() -> str:
    """The function making the calls: caches of what a call returned are kept per caller, because
    each function has its own role and must not reuse what another function was allowed to read."""
    return calling_function.get() or os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
