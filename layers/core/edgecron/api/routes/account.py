"""Usage (billable triggers per month) and App notifications."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from edgecron import clock
from edgecron.api.context import current_app_id
from edgecron.api.pagination import Cursor, Limit, decode_cursor, page_body
from edgecron.api.responses import docs, json_response
from edgecron.data import apps
from edgecron.data import notifications as notification_data
from edgecron.schemas.schedules import NotificationPage, UsageOut
from edgecron.services import usage
from edgecron.services.views import notification_view

router = Router()

Month = Annotated[
    str | None, Query(pattern=r"^\d{4}-(0[1-9]|1[0-2])$", description="YYYY-MM (UTC); default: now")
]


@router.get(
    "/v1/usage", summary="Billable triggers of a month", tags=["Usage"], responses=docs(200, UsageOut)
)
def get_usage(month: Month = None) -> Response[str]:
    app_id = current_app_id()
    month = month or usage.month_of(clock.to_ms(clock.now()))
    app = apps.get_app(app_id)
    quota = int(app.monthly_quota) if app and app.monthly_quota is not None else None
    return json_response(200, {"month": month, **usage.usage_of(app_id, month), "monthly_quota": quota})


@router.get(
    "/v1/notifications",
    summary="App notifications, newest first",
    tags=["Notifications"],
    responses=docs(200, NotificationPage),
)
def list_notifications(limit: Limit = 20, cursor: Cursor = None) -> Response[str]:
    app_id = current_app_id()
    page = notification_data.list_page(
        app_id, limit, decode_cursor(cursor, "app_id", app_id), clock.to_ms(clock.now())
    )
    return json_response(200, page_body([notification_view(n) for n in page.items], page.last_key))
