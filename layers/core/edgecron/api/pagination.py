"""Opaque cursors: the DynamoDB LastEvaluatedKey, base64url-encoded JSON."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query

from edgecron.errors import ParamInvalid

MAX_LIMIT = 100

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="page size (1–100)")]
Cursor = Annotated[str | None, Query(max_length=2048, description="next_cursor of the previous page")]


def encode_cursor(last_key: dict[str, Any] | None) -> str | None:
    if not last_key:
        return None
    raw = json.dumps(last_key, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_scan_cursor(cursor: str | None, hash_key_name: str) -> dict[str, Any] | None:
    """Decode a cursor of a table scan (an operator's listing): only its key, a string, else 400."""
    if not cursor:
        return None
    key = _decoded(cursor)
    if set(key) != {hash_key_name} or "S" not in key[hash_key_name]:
        raise ParamInvalid("cursor is not valid", "cursor")
    return key


def decode_cursor(
    cursor: str | None, hash_key_name: str, hash_key_value: str | tuple[str, ...]
) -> dict[str, Any] | None:
    """Decode and check the cursor belongs to this query (the caller's App: `hash_key_value`, or one
    of them), else 400."""
    if not cursor:
        return None
    key = _decoded(cursor)
    allowed = (hash_key_value,) if isinstance(hash_key_value, str) else hash_key_value
    if key.get(hash_key_name) not in [{"S": value} for value in allowed]:
        raise ParamInvalid("cursor is not valid", "cursor")
    return key


def _decoded(cursor: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise ParamInvalid("cursor is not valid", "cursor") from exc
    if not isinstance(key, dict) or not all(
        isinstance(v, dict)
        and len(v) == 1
        and next(iter(v)) in {"S", "N"}
        and isinstance(next(iter(v.values())), str)
        for v in key.values()
    ):
        raise ParamInvalid("cursor is not valid", "cursor")
    return key
