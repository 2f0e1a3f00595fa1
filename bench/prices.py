"""AWS us-east-1 list prices (on-demand, no free tier) and what template.yaml says about each function.

Stated once here so every figure the benchmark prints can be traced to a price; results.json repeats them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from edgecron_cli.local.template import load_template

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"

LAMBDA_VCPU_MB = 1769  # AWS: a function with 1,769 MB has the equivalent of one vCPU

# Hosted alternatives, $ per million deliveries (their published list prices).
QSTASH_PER_M = 10.0
SVIX_PER_M = 100.0
TARGET_PER_M = 3.0
IDLE_FLOOR_TARGET_MONTH = 4.0  # the stack with no traffic, without its optional dashboard


@dataclass(frozen=True)
class Prices:
    """USD. The delivery-path formula uses the first block; the second block is what the template also runs."""

    lambda_request: float = 0.20 / 1e6
    lambda_gb_s_arm64: float = 0.0000133334
    lambda_gb_s_x86_64: float = 0.0000166667
    sqs_request: float = 0.40 / 1e6  # standard queue, per 64 KB chunk
    dynamodb_wru: float = 0.625 / 1e6  # on-demand write request unit
    dynamodb_rru: float = 0.125 / 1e6  # on-demand read request unit
    api_gateway_http_request: float = 1.00 / 1e6  # HTTP API, first 300 M per month
    # beyond the delivery-path formula
    sns_publish: float = 0.50 / 1e6
    kms_request: float = 0.03 / 10_000
    secrets_manager_request: float = 0.05 / 10_000
    cloudwatch_logs_ingest_gb: float = 0.50
    xray_trace_recorded: float = 5.00 / 1e6
    dynamodb_storage_gb_month: float = 0.25
    dynamodb_pitr_gb_month: float = 0.20
    # fixed monthly
    kms_key_month: float = 1.00
    secret_month: float = 0.40
    dashboard_month: float = 3.00
    alarm_metric_month: float = 0.10  # standard resolution, per metric an alarm watches
    composite_alarm_month: float = 0.50

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


PRICES = Prices()

# Per-request prices of services other than Lambda, DynamoDB and SQS, by botocore service name.
REQUEST_PRICES = {
    "sns": PRICES.sns_publish,
    "kms": PRICES.kms_request,
    "secretsmanager": PRICES.secrets_manager_request,
}
# Control-plane calls, not billed per request.
FREE_OPERATIONS = {"DescribeTable", "ListTables", "GetQueueUrl", "ListQueues"}

# Modelled service latency per call from a Lambda in the same region (for the modelled duration only).
LATENCY_S = {"dynamodb": 0.005, "sqs": 0.010}
DEFAULT_LATENCY_S = 0.015

# Lambda platform log lines per invocation (START, END, REPORT with X-Ray fields), bytes.
PLATFORM_LOG_BYTES = 350
XRAY_SAMPLE_RATE = 0.05  # the default sampling rule beyond its 1 request/s reservoir


@dataclass(frozen=True)
class FunctionConfig:
    logical_id: str
    memory_mb: int
    architecture: str
    sqs_batch_sizes: dict[str, int]  # queue logical id -> BatchSize

    @property
    def gb_s_price(self) -> float:
        return PRICES.lambda_gb_s_arm64 if self.architecture == "arm64" else PRICES.lambda_gb_s_x86_64

    @property
    def cpu_scale(self) -> float:
        """How much slower CPU-bound code runs than on one full core at this memory size."""
        return max(1.0, LAMBDA_VCPU_MB / self.memory_mb)


# The names the harness uses (functions/<name>/app.py) -> template logical ids.
FUNCTION_IDS = {
    "api": "ApiFunction",
    "scan": "ScanFunction",
    "worker": "WorkerFunction",
    "fanout": "FanoutFunction",
    "dlq": "DlqFunction",
    "compensation": "CompensationFunction",
    "fanout_dlq": "FanoutDlqFunction",
}


@cache
def functions() -> dict[str, FunctionConfig]:
    """Memory, architecture and SQS batch sizes of each function, by harness name."""
    template = load_template(TEMPLATE)
    architectures = template.globals_function.get("Architectures") or ["x86_64"]
    out = {}
    for name, logical_id in FUNCTION_IDS.items():
        fn = template.functions[logical_id]
        props = template.resources[logical_id].get("Properties") or {}
        arch = (props.get("Architectures") or architectures)[0]
        out[name] = FunctionConfig(
            logical_id=logical_id,
            memory_mb=fn.memory_size,
            architecture=str(arch),
            sqs_batch_sizes={event.queue: event.batch_size for event in fn.sqs},
        )
    return out


def _alarm_metrics(properties: dict[str, Any]) -> int:
    """Metrics an alarm is billed for: one, or each metric a metric-math alarm reads."""
    queries = properties.get("Metrics")
    if not queries:
        return 1
    return sum(1 for query in queries if isinstance(query, dict) and "MetricStat" in query)


@cache
def template_counts(dashboard: bool | None = None) -> dict[str, int]:
    """Resources with a fixed monthly price in the stack template.yaml deploys: the resources its
    Conditions keep (with the dashboard on or off when `dashboard` says, else the default), and
    every SQS event source of every function, whatever the harness calls it."""
    overrides = {} if dashboard is None else {"DashboardEnabled": "true" if dashboard else "false"}
    template = load_template(TEMPLATE, overrides)

    def of_type(kind: str) -> list[dict[str, Any]]:
        return [r.get("Properties") or {} for r in template.resources.values() if r.get("Type") == kind]

    return {
        "kms_keys": len(of_type("AWS::KMS::Key")),
        "secrets": len(of_type("AWS::SecretsManager::Secret")),
        "dashboards": len(of_type("AWS::CloudWatch::Dashboard")),
        "alarms": len(of_type("AWS::CloudWatch::Alarm")),
        "alarm_metrics": sum(_alarm_metrics(p) for p in of_type("AWS::CloudWatch::Alarm")),
        "composite_alarms": len(of_type("AWS::CloudWatch::CompositeAlarm")),
        "sqs_event_sources": sum(len(fn.sqs) for fn in template.functions.values()),
    }


def table_properties() -> dict[str, dict[str, Any]]:
    return load_template(TEMPLATE).tables
