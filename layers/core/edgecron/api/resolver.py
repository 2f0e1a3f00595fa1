"""Build the API resolver: routes, auth, the error format, the OpenAPI document and the docs UI.

A container imports the routes of a resource (their functions, schemas, mappers and services) when a
request first asks for one of its paths, not at its cold start: a request only ever needs its own. The
routers are told apart by the first segment of their paths, which no two share; every router is
included before anything that needs all of them (the OpenAPI document, the docs UI, the 404/405
answer), and the document lists the paths in the same order however they were loaded."""

from __future__ import annotations

import binascii
import json
import re
import threading
from collections.abc import Mapping
from contextvars import ContextVar
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aws_lambda_powertools.event_handler
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from pydantic import ValidationError

from edgecron import __version__, clock
from edgecron.api.context import set_app_id, set_time_left
from edgecron.api.links import add_links
from edgecron.api.responses import error_response, json_response
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
    from aws_lambda_powertools.utilities.typing import LambdaContext

# The route modules (edgecron.api.routes.<name>), in the order the resolver includes them all.
ROUTERS = (
    "apps",
    "endpoints",
    "retry_policies",
    "task_runs",
    "run_requests",
    "schedules",
    "account",
    "events",
    "stats",
    "console",
)
# The first segment of a path (after /v1 for the API's) → the route modules that serve it.
SERVED_BY: dict[str, tuple[str, ...]] = {
    "apps": ("apps",),
    "endpoints": ("endpoints",),
    "retry-policies": ("retry_policies",),
    "task-runs": ("task_runs", "run_requests"),
    "dead-letters": ("task_runs",),
    "schedules": ("schedules",),
    "account": ("account",),
    "usage": ("account",),
    "notifications": ("account",),
    "events": ("events",),
    "stats": ("stats",),
    "console": ("console",),
}
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


def routers_for(path: str) -> tuple[str, ...]:
    """The route modules a request for `path` may need: those of its first segment, or all of them
    for a path no router serves (its answer, 404 or 405, is decided from every route)."""
    parts = path.strip("/").split("/")
    segment = parts[1] if parts[0] == "v1" and len(parts) > 1 else parts[0]
    return SERVED_BY.get(segment, ROUTERS)


class Resolver(APIGatewayHttpResolver):
    """Powertools' HTTP API resolver whose routers are included when a request first needs them."""

    def __init__(self) -> None:
        super().__init__(enable_validation=True)
        self._included: set[str] = set()
        self._including = threading.Lock()  # the local stack resolves requests on several threads

    def include(self, names: tuple[str, ...]) -> None:
        """Include the routers of these route modules (importing them) unless they already are."""
        if self._included.issuperset(names):
            return
        with self._including:
            for name in names:
                if name not in self._included:
                    router: Router = import_module(f"edgecron.api.routes.{name}").router
                    self.include_router(router)
                    self._included.add(name)

    def include_all(self) -> None:
        self.include(ROUTERS)

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        self.include(routers_for(str(event.get("rawPath") or "")))
        return super().resolve(event, context)


def build_api() -> Resolver:
    """A new resolver (one per container: resolvers hold per-request state)."""
    api = Resolver()
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
            api.include_all()
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


def _route_table(api: Resolver) -> list[tuple[re.Pattern[str], set[str]]]:
    """(path pattern, methods) of every documented route, for telling 405 from 404."""
    document = json.loads(openapi_json(api))
    return [
        (re.compile(re.sub(r"\{[^}]+\}", "[^/]+", path)), {m.upper() for m in operations})
        for path, operations in document["paths"].items()
    ]


def openapi_json(api: Resolver) -> str:
    """The OpenAPI document of every route, corrected where Powertools' generator does not describe
    this API: invalid requests answer 400 in the error format (never 422), and 204 answers have no
    body; each create links to the operations on what it made (api/links.py)."""
    api.include_all()
    document = json.loads(_raw_openapi(api))
    document["paths"] = dict(sorted(document.get("paths", {}).items(), key=_listed_at))
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


def _listed_at(path_item: tuple[str, object]) -> tuple[bool, int]:
    """Where a path stands in the document: the paths with parameters first, then the others (as
    Powertools lists the routes), each group in the order of ROUTERS, whichever router a request
    loaded first; a stable sort keeps the order of each router's own paths."""
    path = path_item[0]
    return "{" not in path, ROUTERS.index(routers_for(path)[0])


def _raw_openapi(api: Resolver) -> str:
    return api.get_openapi_json_schema(
        title=TITLE, version=__version__, security_schemes=security(), security=[{"bearerAuth": []}]
    )


def docs_page(api: Resolver) -> Response[str]:
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
