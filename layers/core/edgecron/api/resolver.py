"""Build the API resolver: routes, auth, the error format, the OpenAPI document and the docs UI."""

from __future__ import annotations

import binascii
import json
import re
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import aws_lambda_powertools.event_handler
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from pydantic import ValidationError

from edgecron import __version__, clock
from edgecron.api.context import set_app_id, set_time_left
from edgecron.api.links import add_links
from edgecron.api.responses import error_response, json_response
from edgecron.api.routes import account, apps, endpoints, events, retry_policies, schedules, task_runs
from edgecron.api.routes.console import router as console_router
from edgecron.api.routes.run_requests import router as run_requests_router
from edgecron.api.routes.stats import router as stats_router
from edgecron.errors import (
    ApiError,
    NotFound,
    ParamInvalid,
    PayloadTooLarge,
    RateLimited,
    StoredItemUnreadable,
    Unauthorized,
)
from edgecron.observability import STORED_ITEMS_UNREADABLE, count, logger
from edgecron.schemas.common import MAX_BODY_BYTES, MAX_JSON_DEPTH
from edgecron.services import apps as app_service
from edgecron.services import rate_limits as rate_service

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.models import SecurityScheme

ROUTERS = [
    apps.router,
    endpoints.router,
    retry_policies.router,
    task_runs.router,
    run_requests_router,
    schedules.router,
    account.router,
    events.router,
    stats_router,
    console_router,
]
TITLE = "EdgeCron API"
ADMIN_PREFIX = "/v1/apps"
ACCOUNT_PATH = "/v1/account"  # answers to the admin key as well as to App keys
SWAGGER_UI = Path(aws_lambda_powertools.event_handler.__file__).parent / "openapi" / "swagger_ui"


@cache
def security() -> dict[str, SecurityScheme]:
    """The OpenAPI document's security scheme. Powertools' OpenAPI models (a pydantic model of every
    part of an OpenAPI document) are imported here, when a document is asked for, not at cold start."""
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    return {
        "bearerAuth": HTTPBearer(
            description="an App API key (ek_…) or, for /v1/apps and /v1/account, the admin key"
        )
    }


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization") or headers.get("Authorization") or ""
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _refusal(app: APIGatewayHttpResolver) -> Response[str] | None:
    """The answer to a /v1 request that must go no further: 401 without a valid key, then 400/413 for
    a body nothing may parse. Every way out of a matched route asks this first (the middleware, the
    validation error and the unexpected error handlers), so a request without a key learns nothing
    but 401, whichever check Powertools ran first. Sets the caller's App for the route."""
    path = app.current_event.path
    set_app_id(None)
    context = app.lambda_context
    set_time_left(context.get_remaining_time_in_millis() if context is not None else None)
    if not path.startswith("/v1/"):
        return None
    token = _bearer(app.current_event.headers or {})
    unauthorized = error_response(Unauthorized("missing or invalid API key"))
    if token is None:
        return unauthorized
    if path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/"):
        if not app_service.is_admin_key(token):
            return unauthorized
        return _unreadable_body(app)
    app_id = app_service.app_for_key(token)
    if app_id is None:
        if path == ACCOUNT_PATH and app_service.is_admin_key(token):  # either kind of key may ask
            set_app_id(None, admin=True)
            return _unreadable_body(app)
        return unauthorized
    set_app_id(app_id)
    limited = _rate_limited(app, app_id)
    return limited if limited is not None else _unreadable_body(app)


_admitted: ContextVar[object | None] = ContextVar("edgecron_admitted_event", default=None)


def _rate_limited(app: APIGatewayHttpResolver, app_id: str) -> Response[str] | None:
    """429 with Retry-After when the App is over its request rate (services/rate_limits.py). A
    request is counted once, however many ways out of its route ask `_refusal`."""
    event = app.current_event.raw_event
    if _admitted.get() is event:
        return None
    _admitted.set(event)
    retry_after = rate_service.admit(app_id, clock.to_ms(clock.now()))
    if retry_after is None:
        return None
    response = error_response(RateLimited("the App is over its request rate; retry after the delay"))
    response.headers["Retry-After"] = str(retry_after)
    return response


def _gate(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[str]:
    """Route middleware: authenticate and check the body before the route runs."""
    refused = _refusal(app)
    if refused is not None:
        return refused
    try:
        return next_middleware(app)
    finally:
        set_app_id(None)


def _unreadable_body(app: APIGatewayHttpResolver) -> Response[str] | None:
    """400 for a body that is not UTF-8 JSON, nests too deep or is not a JSON object, 413 for one too
    large: all checked before any parser sees the body (Powertools' would fail on some with a 500, and
    its validation takes a list for its first element)."""
    event = app.current_event
    if not event.body:
        return None
    content_type = (event.headers or {}).get("content-type", "application/json").split(";")[0].strip().lower()
    message = "request body must be JSON sent as content-type: application/json"
    if content_type != "application/json" and not content_type.endswith("+json"):
        return error_response(ParamInvalid(message, "content-type"))
    try:
        text = event.decoded_body or ""
    except (UnicodeDecodeError, binascii.Error, ValueError):
        return error_response(ParamInvalid("request body is not valid UTF-8 JSON", "body"))
    if len(text.encode("utf-8", "replace")) > MAX_BODY_BYTES:
        return error_response(PayloadTooLarge(f"request body is larger than {MAX_BODY_BYTES} bytes", "body"))
    too_deep = _too_deep(text, MAX_JSON_DEPTH)
    if too_deep is not None:
        return error_response(ParamInvalid(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", too_deep))
    try:
        parsed = json.loads(text)
    except (UnicodeDecodeError, ValueError):
        return error_response(ParamInvalid("request body is not valid UTF-8 JSON", "body"))
    if not isinstance(parsed, dict):
        return error_response(ParamInvalid("request body must be a JSON object", "body"))
    return None


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_JSON_TOKEN = re.compile(_JSON_STRING.pattern + r"|[\[\]{}]")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_EMPTY_PAIR = re.compile(r"\[\]|\{\}")


def _too_deep(text: str, limit: int) -> str | None:
    """The field (a top-level key, else "body") under which `text` nests deeper than `limit`, or
    None. No recursion, since it runs before the text is parsed: the brackets outside strings lose
    their innermost pairs once per level (regex passes); only a body that keeps brackets after
    `limit` passes (too deep, or not JSON) is walked token by token to name the field."""
    if text.count("[") + text.count("{") <= limit:
        return None
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    for _ in range(limit):
        shorter = _EMPTY_PAIR.sub("", brackets)
        if not shorter:
            return None
        if shorter == brackets:
            break  # unbalanced: not JSON, unless it is also too deep
        brackets = shorter
    return _deep_field(text, limit)


def _deep_field(text: str, limit: int) -> str | None:
    depth = 0
    object_body = False
    key = "body"
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            if depth == 0:
                object_body = token == "{"
            depth += 1
            if depth > limit:
                return key if object_body else "body"
        elif token in "]}":
            depth -= 1
        elif depth == 1 and object_body:
            try:
                key = str(json.loads(token))
            except ValueError:
                key = "body"
    return None


_UNION_TAG = re.compile(r"^[a-z-]+\[.*\]$")  # pydantic's name of a union's branch, e.g. function-after[...]


def _field(loc: tuple[int | str, ...]) -> str:
    """The field an error names: its location without the request part it came in and without the
    tags pydantic adds for the branches of a union (`function-after[...]`), which name no field."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in {"body", "query", "path", "header"}:
        parts = parts[1:]
    return ".".join(p for p in parts if not _UNION_TAG.match(p)) or "body"


def _validation_error(exc: RequestValidationError | ValidationError) -> Response[str]:
    errors = exc.errors()
    first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request", "type": "value_error"}
    loc = tuple(first.get("loc", ()))
    kind = first.get("type", "")
    if kind == "json_invalid":
        return error_response(ParamInvalid("request body is not valid JSON", "body"))
    message = str(first.get("msg", "invalid value"))
    if kind == "extra_forbidden":
        message = "unknown field"
    if loc and loc[0] == "header" and len(loc) > 1 and str(loc[1]) == "idempotency-key":
        return error_response(ParamInvalid(message, "Idempotency-Key"))
    return error_response(ParamInvalid(message.removeprefix("Value error, "), _field(loc)))


def build_api() -> APIGatewayHttpResolver:
    """A new resolver (one per container: resolvers hold per-request state)."""
    api = APIGatewayHttpResolver(enable_validation=True)
    for router in ROUTERS:
        api.include_router(router)
    api.use(middlewares=[_gate])

    @api.exception_handler(ApiError)
    def _api_error(exc: ApiError) -> Response[str]:
        return error_response(exc)

    @api.exception_handler(StoredItemUnreadable)
    def _unreadable(exc: StoredItemUnreadable) -> Response[str]:
        logger.error(
            "stored item this release cannot read",
            extra={"kind": exc.kind, "item_id": exc.item_id, "app_id": exc.app_id, "reason": exc.reason},
        )
        count(STORED_ITEMS_UNREADABLE)
        return error_response(exc)

    @api.exception_handler(RequestValidationError)
    def _invalid(exc: RequestValidationError) -> Response[str]:
        refused = _refusal(api)
        return refused if refused is not None else _validation_error(exc)

    routes: list[tuple[re.Pattern[str], set[str]]] = []  # from the OpenAPI document, on the first 404

    @api.not_found
    def _not_found(_: Exception) -> Response[str]:
        path, method = api.current_event.path, api.current_event.http_method.upper()
        if not routes:
            routes.extend(_route_table(api))
        allowed = sorted({m for pattern, methods in routes for m in methods if pattern.fullmatch(path)})
        if allowed and method not in allowed:
            response = error_response(
                ApiError(f"{method} is not allowed here", "method", code="METHOD_NOT_ALLOWED", status=405)
            )
            response.headers["Allow"] = ", ".join(allowed)
            return response
        return error_response(NotFound("no such route", "path"))

    @api.exception_handler(Exception)
    def _unexpected(exc: Exception) -> Response[str]:
        # Powertools' request validation reads the body before the middleware: a body that is not
        # UTF-8 fails there, and answers as the middleware would have.
        try:
            refused = _refusal(api)
        except Exception:  # the check itself failed: the 500 below
            refused = None
        if refused is not None:
            return refused
        logger.exception("unhandled error")
        return json_response(500, {"error": {"code": "INTERNAL", "message": "internal error"}})

    @api.get("/docs", include_in_schema=False)
    def _docs() -> Response[str]:
        return docs_page(api)

    @api.get("/openapi.json", include_in_schema=False)
    def _openapi() -> Response[str]:
        return Response(status_code=200, content_type="application/json", body=openapi_json(api))

    return api


def _route_table(api: APIGatewayHttpResolver) -> list[tuple[re.Pattern[str], set[str]]]:
    """(path pattern, methods) of every documented route, for telling 405 from 404."""
    document = json.loads(openapi_json(api))
    return [
        (re.compile(re.sub(r"\{[^}]+\}", "[^/]+", path)), {m.upper() for m in operations})
        for path, operations in document["paths"].items()
    ]


def openapi_json(api: APIGatewayHttpResolver) -> str:
    """The OpenAPI document, corrected where Powertools' generator does not describe this API: invalid
    requests answer 400 in the error format (never 422), and 204 answers have no body; each create
    links to the operations on what it made (api/links.py)."""
    document = json.loads(_raw_openapi(api))
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            responses.pop("422", None)
            if "204" in responses:
                responses["204"].pop("content", None)
    schemas = document.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(unused, None)  # Powertools' 422 and response-validation shapes: never answered
    add_links(document)
    return json.dumps(document)


def _raw_openapi(api: APIGatewayHttpResolver) -> str:
    return api.get_openapi_json_schema(
        title=TITLE, version=__version__, security_schemes=security(), security=[{"bearerAuth": []}]
    )


def docs_page(api: APIGatewayHttpResolver) -> Response[str]:
    """The Swagger UI page of the OpenAPI document (Powertools' page, its script and style inline);
    `?format=json` answers the document it shows, `?format=oauth2-redirect` Swagger UI's OAuth2 page."""
    from aws_lambda_powertools.event_handler.openapi.swagger_ui import (
        generate_oauth2_redirect_html,
        generate_swagger_html,
    )

    query = api.current_event.query_string_parameters or {}
    if query.get("format") == "oauth2-redirect":
        return Response(status_code=200, content_type="text/html", body=generate_oauth2_redirect_html())
    # Escaped so that no "</script>" inside the document can end the page's script element.
    spec = openapi_json(api).replace("</", "<\\/")
    if query.get("format") == "json":
        return Response(status_code=200, content_type="application/json", body=spec)
    script = (SWAGGER_UI / "swagger-ui-bundle.min.js").read_text(encoding="utf-8")
    style = (SWAGGER_UI / "swagger-ui.min.css").read_text(encoding="utf-8")
    page = generate_swagger_html(spec, script, style, "", None)
    return Response(status_code=200, content_type="text/html", body=page)
