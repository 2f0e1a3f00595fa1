"""`Idempotency-Key` on creates: a repeat within 24 h returns the first response; another body → 409.

The record keeps the response without its secrets (a signing secret is shown in one response only),
so a replay answers the same object without `secret`. A request that died mid-way holds the key only
until its invocation's timeout; the retry then answers for the object the dead one made (ids derive
from the key), or makes it (docs/security.md). A request that failed with an error releases the key
only when nothing was stored; else the key stays bound to the object's id and the retry, at once,
answers for that object and finishes what the failed request left undone."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header
from pydantic import BaseModel
from pydantic.json_schema import SkipJsonSchema

from edgecron import clock, ids
from edgecron.api.context import time_left_ms
from edgecron.data import idempotency as store
from edgecron.domain.idempotency import DONE, Stored
from edgecron.errors import Conflict, ParamInvalid
from edgecron.observability import logger

IdempotencyKey = Annotated[
    str | SkipJsonSchema[None],  # a header is absent or a string, never null
    Header(
        alias="idempotency-key",
        description="makes a create safe to retry for 24 h; not empty, not only spaces",
        max_length=255,
        json_schema_extra={"minLength": 1, "pattern": r"\S"},
    ),
]
#: Response fields shown once and never stored for a replay.
SECRET_FIELDS = frozenset({"secret", "api_key"})


def without_secrets(body: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in body.items() if name not in SECRET_FIELDS}


def _answer(status: int, body: Any, headers: dict[str, str] | None = None) -> Response[Any]:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=body, headers=headers
    )


def run_once[Out: BaseModel](
    app_id: str,
    scope: str,
    key: str | None,
    request: Any,
    prefix: str,
    status: int,
    create: Callable[[str], Out],
    recover: Callable[[str], Out | None],
) -> Response[Out]:
    """Run `create(new_id)` once per (App, scope, key) and replay its stored answer afterwards.
    `recover(id)` answers for an object an earlier request with the key made before it died."""
    now_ms = clock.to_ms(clock.now())
    if key is None:
        return _answer(status, create(ids.new_id(prefix, now_ms)))
    if not key.strip():
        raise ParamInvalid("Idempotency-Key must not be empty", "Idempotency-Key")
    idem_key = f"{app_id}#{scope}#{key}"
    request_hash = hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()
    claimed = store.claim(idem_key, request_hash, now_ms, time_left_ms())
    if isinstance(claimed, Stored):
        return _replay(claimed, request_hash)
    object_id = ids.keyed_id(prefix, claimed.first_ms, idem_key)
    answer = recover(object_id) if claimed.taken_over else None
    if answer is None:
        try:
            answer = create(object_id)
        except Exception:
            _failed(idem_key, object_id, recover)
            raise
    stored = without_secrets(answer.model_dump(mode="json"))
    store.complete(idem_key, status, json.dumps(stored, separators=(",", ":")))
    return _answer(status, answer)


def _failed[Out: BaseModel](idem_key: str, object_id: str, recover: Callable[[str], Out | None]) -> None:
    """A create raised. Its object may be stored all the same (a write whose answer was lost, a
    later step that failed): then the key stays bound to the object's id and the client's retry
    answers for it (`recover` finishes what the create left undone). Only a create that stored
    nothing, as a strongly consistent read shows, releases the key."""
    try:
        stored = recover(object_id) is not None
    except Exception:
        stored = True  # cannot tell: keep the id, never make a second object
    try:
        if stored:
            store.lapse(idem_key)
        else:
            store.release(idem_key)
    except Exception:  # the lease ends with the invocation's timeout all the same
        logger.warning("idempotency key left to its lease", extra={"object_id": object_id})


def _replay(existing: Stored, request_hash: str) -> Response[Any]:
    if existing.request_hash != request_hash:
        raise Conflict(
            "Idempotency-Key was already used with a different request",
            "Idempotency-Key",
            code="IDEMPOTENCY_KEY_REUSED",
        )
    if existing.status != DONE or existing.response_body is None:
        raise Conflict(
            "a request with this Idempotency-Key is still in progress",
            "Idempotency-Key",
            code="IDEMPOTENCY_IN_PROGRESS",
        )
    return _answer(
        existing.response_status or 200,
        json.loads(existing.response_body),
        headers={"idempotent-replayed": "true"},
    )
