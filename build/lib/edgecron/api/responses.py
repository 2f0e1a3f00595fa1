"""JSON responses and their OpenAPI descriptions."""

from __future__ import annotations

import json
from typing import Any, cast

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from edgecron.errors import ApiError


class ErrorDetail(BaseModel):
    code: str
    message: str
    field: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response[str]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(body, separators=(",", ":"), default=str),
        headers=headers,
    )


def error_response(error: ApiError) -> Response[str]:
    return json_response(error.status, error.body())


def docs(ok: int, model: type[BaseModel] | None, *errors: int) -> dict[int, OpenAPIResponse]:
    """The `responses=` of a route: its success model plus the error statuses it may answer."""
    out: dict[int, dict[str, Any]] = {}
    if model is None:
        out[ok] = {"description": "no content"}
    else:
        out[ok] = {"description": "success", "content": {"application/json": {"model": model}}}
    for status in sorted({400, 401, *errors}):
        out[status] = {"description": "error", "content": {"application/json": {"model": ErrorBody}}}
    return cast(dict[int, OpenAPIResponse], out)
