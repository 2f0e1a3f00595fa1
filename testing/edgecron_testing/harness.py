"""In-process harness for integration tests: the real handlers against moto, provisioned from
template.yaml, with API Gateway and SQS events built the way AWS builds them."""

from __future__ import annotations

import base64
import importlib.util
import json
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from edgecron_testing.iam import acting_as

if TYPE_CHECKING:
    from edgecron.clock import FixedClock

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


@dataclass
class FakeContext:
    function_name: str
    memory_limit_in_mb: int = 256
    function_version: str = "$LATEST"
    aws_request_id: str = ""
    log_group_name: str = "/aws/lambda/test"
    log_stream_name: str = "test"

    def __post_init__(self) -> None:
        self.aws_request_id = self.aws_request_id or str(uuid.uuid4())
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        """A fresh invocation has its function's whole Timeout (template.yaml) left."""
        return timeout_sec(self.function_name) * 1000


@cache
def timeout_sec(function: str) -> int:
    """The Timeout template.yaml gives functions/<function>/ (Globals merged in)."""
    from edgecron_cli.local.template import load_template

    for spec in load_template(ROOT / "template.yaml").functions.values():
        if spec.code_uri.rstrip("/") == f"functions/{function}":
            return spec.timeout
    raise KeyError(function)


def load_function(name: str) -> ModuleType:
    """Import functions/<name>/app.py (each handler module is named app.py, so import by path)."""
    module_name = f"edgecron_fn_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, ROOT / "functions" / name / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def invoke(name: str, event: dict[str, Any]) -> Any:
    """Run the handler as functions/<name>: its AWS calls are that function's (IAM, cache keys)."""
    from edgecron_testing import faults

    handler = load_function(name).lambda_handler
    context = FakeContext(name)
    token = faults.invocation_started(name, context.aws_request_id)
    try:
        with acting_as(name):
            return handler(event, context)
    finally:
        faults.invocation_ended(token)


def api_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    key: str | None = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    raw_body: str | None = None,
) -> dict[str, Any]:
    event = load_event("api-list-endpoints.json")
    hdrs = {"content-type": "application/json", "user-agent": "pytest"}
    if key:
        hdrs["authorization"] = f"Bearer {key}"
    hdrs.update({k.lower(): v for k, v in (headers or {}).items()})
    event["rawPath"] = path
    event["rawQueryString"] = urlencode(query or {})
    event["queryStringParameters"] = dict(query) if query else None
    event["headers"] = hdrs
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    event["routeKey"] = "$default"
    event["body"] = raw_body if raw_body is not None else (None if body is None else json.dumps(body))
    event["isBase64Encoded"] = False
    return event


@dataclass
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str]

    def json(self) -> Any:
        return self.body


def response_body(result: dict[str, Any]) -> Any:
    """The API function's answer body: JSON when it parses, else the text (base64 undone)."""
    raw = result.get("body") or ""
    if result.get("isBase64Encoded"):
        raw = base64.b64decode(raw).decode()
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw


def call_api(method: str, path: str, **kwargs: Any) -> ApiResponse:
    result = invoke("api", api_event(method, path, **kwargs))
    return ApiResponse(int(result["statusCode"]), response_body(result), dict(result.get("headers") or {}))


def created(key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST `body` to `path` with `key` and return what was made; any answer but a 201 fails the test."""
    resp = call_api("POST", path, key=key, body=body)
    assert resp.status == 201, resp.body
    return dict(resp.body)


def new_endpoint(key: str, url: str = "http://127.0.0.1:9/x", **extra: Any) -> str:
    """A new Endpoint's id (the default URL is a closed port on loopback: nothing is delivered)."""
    return str(created(key, "/v1/endpoints", {"url": url, **extra})["id"])


def new_schedule(key: str, **body: Any) -> dict[str, Any]:
    """A new Schedule as the API answered it."""
    return created(key, "/v1/schedules", body)


def schedules_firing_once(key: str, endpoint_id: str, n: int) -> tuple[datetime, list[str]]:
    """n daily schedules whose next fire is the same second, three minutes ahead: created beyond the
    look-ahead, so the create does not dispatch them and the scan does. (fire time, their ids)"""
    fire_at = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=3)
    cron = f"{fire_at.second} {fire_at.minute} {fire_at.hour} * * *"
    ids = []
    for i in range(n):
        body = {"cron": cron, "endpoint_ids": [endpoint_id], "name": f"s{i}"}
        ids.append(str(created(key, "/v1/schedules", body)["id"]))
    return fire_at, ids


def delivery_message(run_id: str, app_id: str) -> dict[str, Any]:
    """A run's delivery message as a worker gets it from SQS, each time with a fresh receipt."""
    return {
        "MessageId": uuid.uuid4().hex,
        "ReceiptHandle": uuid.uuid4().hex,
        "Body": json.dumps({"run_id": run_id, "app_id": app_id}),
        "Attributes": {},
    }


def given_up_message(run_id: str, app_id: str, receives: int = 5) -> dict[str, Any]:
    """The delivery message of a run as the DLQ consumer gets it: SQS gave up after `receives`."""
    return {
        "MessageId": run_id,
        "ReceiptHandle": run_id,
        "Body": json.dumps({"run_id": run_id, "app_id": app_id}),
        "Attributes": {"ApproximateReceiveCount": str(receives)},
    }


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    records = []
    for m in messages:
        attrs = m.get("Attributes", {})
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {
                    "ApproximateReceiveCount": attrs.get("ApproximateReceiveCount", "1"),
                    "SentTimestamp": attrs.get("SentTimestamp", str(int(time.time() * 1000))),
                    "SenderId": "AIDAEXAMPLE",
                    "ApproximateFirstReceiveTimestamp": attrs.get("ApproximateFirstReceiveTimestamp", "0"),
                },
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
        )
    return {"Records": records}


def usage_once_checked(
    fixed: FixedClock, key: str, *, through: datetime | None = None, **query: str
) -> dict[str, Any]:
    """The App's usage once the scan's check of recent runs has read every run due up to `through`
    (default: the end of the current look-ahead window, which holds every fire dispatched so far).
    The check counts the direct runs and schedule fires of an App without a quota a few minutes
    after their time: the injected clock moves to `through` plus the check's lag, a scan runs, and
    the usage is read."""
    from edgecron.config import get_settings
    from edgecron.data.run_checks import check_lag_ms

    settings = get_settings()
    until = through or fixed.now() + timedelta(milliseconds=settings.lookahead_ms)
    fixed.set(until + timedelta(milliseconds=check_lag_ms(settings) + 1000))
    invoke("scan", {"detail": {}})
    return dict(call_api("GET", "/v1/usage", key=key, query=query or None).body)
