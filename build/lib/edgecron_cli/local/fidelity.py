"""The botocore hook that puts AWS behaviour moto lacks in front of moto: AWS limits (limits.py) and
eventually consistent index reads (consistency.py). Emulator and test support only, never product
code.

It wraps `botocore.client.BaseClient._make_api_call`, the one method every boto3 and PynamoDB call
of this process goes through, around whatever is installed there already (the integration tests'
atomic-call lock), so it sees each call's operation, parameters and parsed answer. Clients of
other processes (the AWS CLI against the local stack) are not affected.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import botocore.client
from botocore.exceptions import ClientError

from edgecron.data.aws import calling_function
from edgecron_cli.local import limits, moto_patches
from edgecron_cli.local.consistency import READ_OPERATIONS, WRITE_OPERATIONS, IndexLag, TableShape

MakeApiCall = Callable[[Any, str, dict[str, Any]], Any]

DEFAULT_LOCAL_GSI_LAG_MS = 100.0
PATCH = "AWS limits, index lag and TTL in front of every botocore call"


class AwsFidelity:
    """Installs and removes the hook; `lag` is None when index reads are not lagged."""

    def __init__(self, lag: IndexLag | None = None, enforce_limits: bool = True) -> None:
        self.lag = lag
        self.enforce_limits = enforce_limits
        self._shapes: dict[str, TableShape | None] = {}
        self._shapes_lock = threading.Lock()
        self._original: MakeApiCall | None = None
        self._installed: MakeApiCall | None = None

    def install(self) -> AwsFidelity:
        if self._original is not None:
            return self
        # botocore's, not moto's: any moto release, as long as the method is where it was
        if not moto_patches.applies(PATCH, [(botocore.client.BaseClient, "_make_api_call")], versioned=False):
            return self
        original: MakeApiCall = botocore.client.BaseClient._make_api_call
        self._original = original

        def make_api_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            return self._call(original, client, operation, params)

        self._installed = make_api_call
        botocore.client.BaseClient._make_api_call = make_api_call  # type: ignore[method-assign,assignment]
        return self

    def uninstall(self) -> None:
        """Put back what was there, unless something wrapped the hook since (then it stays, inert)."""
        if self._original is None:
            return
        if botocore.client.BaseClient.__dict__.get("_make_api_call") is self._installed:
            botocore.client.BaseClient._make_api_call = self._original  # type: ignore[method-assign]
        self._original = None
        self.lag = None
        self.enforce_limits = False

    def forget_tables(self) -> None:
        """Forget the table shapes read so far (tests that recreate tables under the same names)."""
        with self._shapes_lock:
            self._shapes.clear()

    def _call(self, original: MakeApiCall, client: Any, operation: str, params: dict[str, Any]) -> Any:
        service = client.meta.service_model.service_name
        if service not in ("dynamodb", "sqs", "sns"):
            return original(client, operation, params)
        if self.enforce_limits:
            error = limits.check(
                service, operation, params, key_attributes=lambda table: self._keys(original, client, table)
            )
            if error is not None:
                raise _client_error(client, error, operation)
            if service == "sqs" and operation == "SendMessageBatch":
                return _send_batch_without_negative_delays(original, client, params)
        result = original(client, operation, params)
        lag = self.lag
        if lag is None or service != "dynamodb":
            return result
        if operation in WRITE_OPERATIONS:
            lag.record(operation, params, lambda table: self._shape(original, client, table))
        elif operation in READ_OPERATIONS and params.get("IndexName") and isinstance(result, dict):
            table, index = str(params.get("TableName")), str(params["IndexName"])
            shape = self._shape(original, client, table)
            if shape is not None and index in shape.indexes:
                return lag.visible(table, index, shape, result)
        return result

    def _shape(self, original: MakeApiCall, client: Any, table: str) -> TableShape | None:
        with self._shapes_lock:
            if table in self._shapes:
                return self._shapes[table]
        # The emulator's own look-up, not the calling function's: no role applies to it.
        token = calling_function.set("")
        try:
            described = original(client, "DescribeTable", {"TableName": table})
            shape: TableShape | None = TableShape.from_description(described["Table"])
        except (ClientError, KeyError):
            shape = None  # let the call itself report the missing table
        finally:
            calling_function.reset(token)
        with self._shapes_lock:
            self._shapes[table] = shape
        return shape

    def _keys(self, original: MakeApiCall, client: Any, table: str) -> tuple[str, ...] | None:
        shape = self._shape(original, client, table)
        return shape.keys if shape is not None else None


def _client_error(client: Any, error: limits.LimitError, operation: str) -> ClientError:
    """The exception botocore raises for this error from AWS (a modeled class where there is one)."""
    exception_class = client.exceptions.from_code(error.query_code or error.code)
    exception: ClientError = exception_class(error.response(), operation)
    return exception


def _send_batch_without_negative_delays(original: MakeApiCall, client: Any, params: dict[str, Any]) -> Any:
    """SendMessageBatch where an entry with a negative DelaySeconds fails on its own, as in SQS."""
    failed = limits.negative_delay_entries(params)
    if not failed:
        return original(client, "SendMessageBatch", params)
    bad = {entry["Id"] for entry in failed}
    rest = [entry for entry in params.get("Entries") or [] if entry.get("Id") not in bad]
    result: dict[str, Any] = {"Successful": [], "Failed": []}
    if rest:
        result = dict(original(client, "SendMessageBatch", {**params, "Entries": rest}))
    result["Failed"] = [*result.get("Failed", []), *failed]
    return result


# the local stack -------------------------------------------------------------------------------------


def local_gsi_lag_ms(environ: Mapping[str, str] = os.environ) -> float:
    """EDGECRON_LOCAL_GSI_LAG_MS: how long the local stack's indexes lag their tables (0 = never)."""
    raw = environ.get("EDGECRON_LOCAL_GSI_LAG_MS", "")
    try:
        value = float(raw) if raw.strip() else DEFAULT_LOCAL_GSI_LAG_MS
    except ValueError:
        value = DEFAULT_LOCAL_GSI_LAG_MS
    return max(0.0, value)


def install_for_local_stack(environ: Mapping[str, str] = os.environ) -> AwsFidelity:
    """Limits always; index lag by wall-clock time (the local stack runs on the real clock)."""
    lag_ms = local_gsi_lag_ms(environ)
    lag = IndexLag(lag_ms, lambda: time.time() * 1000) if lag_ms > 0 else None
    return AwsFidelity(lag).install()
