"""GET /console and its assets: the web console, served by the API function itself."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from edgecron import console
from edgecron.api.responses import error_response
from edgecron.errors import NotFound

router = Router()


def _serve(name: str) -> Response[str]:
    found = console.asset(name)
    if found is None:
        return error_response(NotFound("no such console file", "path"))
    return Response(
        status_code=200,
        content_type=found.content_type,
        body=found.body,
        headers=dict(console.SECURITY_HEADERS),
    )


@router.get("/console", include_in_schema=False)
@router.get("/console/", include_in_schema=False)
def index() -> Response[str]:
    return _serve(console.INDEX)


@router.get("/console/<name>", include_in_schema=False)
def asset(name: str) -> Response[str]:
    return _serve(name)
