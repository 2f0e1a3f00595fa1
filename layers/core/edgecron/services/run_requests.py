"""What a Task Run's attempts send, for inspection: its Endpoint's request with credentials redacted."""

from __future__ import annotations

from edgecron.domain.delivery_request import RequestView, request_body, request_view
from edgecron.domain.http_headers import is_reserved
from edgecron.domain.vocabulary import Source
from edgecron.services import endpoints as endpoint_service
from edgecron.services import task_runs as run_service
from edgecron.services.http_sender import USER_AGENT


def request_of(app_id: str, run_id: str, now_ms: int) -> RequestView:
    """The request the run's attempts send (404 for an unknown run or a deleted Endpoint). Headers a
    delivery leaves out (names EdgeCron sets itself) are left out here too."""
    run = run_service.get(app_id, run_id, now_ms)
    endpoint = endpoint_service.get(app_id, run.endpoint_id)
    stored = endpoint.headers if isinstance(endpoint.headers, dict) else {}
    custom = {str(k): str(v) for k, v in stored.items() if not is_reserved(str(k))}
    body = request_body(run.payload, endpoint.method)
    scheduled = run.source == Source.SCHEDULE and run.source_id is not None and run.fire_at is not None
    fire = (str(run.source_id), int(run.fire_at or 0)) if scheduled else None
    return request_view(endpoint.method, endpoint.url, custom, USER_AGENT, run.run_id, body, fire)
