"""The typed Python client of the EdgeCron API (docs/client.md).

from edgecron_client import EdgeCron

client = EdgeCron("https://api.example.com", "ek_...")
for run in client.task_runs.iter(status="failed"):
    print(run["id"], run["last_error"])
"""

from edgecron_client.client import MAX_PAGE, EdgeCron, new_idempotency_key
from edgecron_client.errors import ApiError, EdgeCronError, TransportError
from edgecron_client.models import (
    ApiKey,
    ApiKeyCreated,
    ApiKeyRotated,
    App,
    AppCreated,
    Attempt,
    Endpoint,
    EndpointHealth,
    Event,
    EventDelivery,
    Fire,
    FireRun,
    Notification,
    Page,
    RecoverResult,
    ReplayResult,
    RetryPolicy,
    Schedule,
    TaskRun,
    Usage,
)
from edgecron_client.transport import NO_RETRY, Backoff

__all__ = [
    "MAX_PAGE",
    "NO_RETRY",
    "ApiError",
    "ApiKey",
    "ApiKeyCreated",
    "ApiKeyRotated",
    "App",
    "AppCreated",
    "Attempt",
    "Backoff",
    "EdgeCron",
    "EdgeCronError",
    "Endpoint",
    "EndpointHealth",
    "Event",
    "EventDelivery",
    "Fire",
    "FireRun",
    "Notification",
    "Page",
    "RecoverResult",
    "ReplayResult",
    "RetryPolicy",
    "Schedule",
    "TaskRun",
    "TransportError",
    "Usage",
    "new_idempotency_key",
]
