"""`Idempotency-Key` on creates: a repeat within 24 h returns the first response; another body → 409."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Header

from edgecron import clock
from edgecron.api.responses import json_response
from edgecron.data import idempotency as store
from edgecron.errors import Conflict, ParamInvalid

IdempotencyKey = Annotated[
    str | None,
    Header(alias="idempotency-key", description="makes a create safe to retry for 24 h", max_length=255),
]


def run_once(
    app_id: str, scope: str, key: str | None, request: Any, create: Callable[[], tuple[int, dict[str, Any]]]
) -> Response[str]:
    """Run `create` once per (App, scope, key); replay its stored response afterwards."""
    if key is None:
        status, body = create()
        return json_response(status, body)
    if not key.strip():
        raise ParamInvalid("Idempotency-Key must not be empty", "Idempotency-Key")
    idem_key = f"{app_id}#{scope}#{key}"
    request_hash = hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()
    existing = store.claim(idem_key, request_hash, clock.to_ms(clock.now()))
    if existing is not None:
        if existing.request_hash != request_hash:
            raise Conflict(
                "Idempotency-Key was already used with a different request",
                "Idempotency-Key",
                code="IDEMPOTENCY_KEY_REUSED",
            )
        if existing.status != "done" or existing.response_body is None:
            raise Conflict(
                "a request with this Idempotency-Key is still in progress",
                "Idempotency-Key",
                code="IDEMPOTENCY_IN_PROGRESS",
            )
        return json_response(
            existing.response_status or 200,
            json.loads(existing.response_body),
            headers={"idempotent-replayed": "true"},
        )
    try:
        status, body = create()
    except Exception:
        store.release(idem_key)
        raise
    store.complete(idem_key, status, json.dumps(body, default=str))
    return json_response(status, body)
