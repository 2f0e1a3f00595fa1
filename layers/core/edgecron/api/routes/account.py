"""Who is calling (which kind of key), usage (billable triggers per month) and App notifications."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from edgecron import clock
from edgecron.api.context import current_app_id, current_role
from edgecron.api.mappers import account as mappers
from edgecron.api.pagination import Cursor, Limit, decode_cursor, encode_cursor
from edgecron.api.responses import docs
from edgecron.domain.vocabulary import KeyRole
from edgecron.schemas.apps import AccountOut
from edgecron.schemas.schedules import NotificationPage, UsageOut
from edgecron.services import apps as service

router = Router()

Month = Annotated[
    str | None, Query(pattern=r"^\d{4}-(0[1-9]|1[0-2])$", description="YYYY-MM (UTC); default: now")
]


@router.get(
    "/v1/account",
    summary="Which kind of key is calling (admin or app) and its App",
    tags=["Account"],
    responses=docs(200, AccountOut, 401),
)
def get_account() -> AccountOut:
    role = current_role()
    return mappers.account_out(role, current_app_id() if role == KeyRole.APP else None)


@router.get(
    "/v1/usage", summary="Billable triggers of a month", tags=["Usage"], responses=docs(200, UsageOut)
)
def get_usage(month: Month = None) -> UsageOut:
    return mappers.usage_out(*service.usage_of(current_app_id(), month, clock.to_ms(clock.now())))


@router.get(
    "/v1/notifications",
    summary="App notifications, newest first",
    tags=["Notifications"],
    responses=docs(200, NotificationPage),
)
def list_notifications(limit: Limit = 20, cursor: Cursor = None) -> NotificationPage:
    app_id = current_app_id()
    page = service.notifications_page(
        app_id, limit, decode_cursor(cursor, "app_id", app_id), clock.to_ms(clock.now())
    )
    return NotificationPage(
        data=[mappers.notification_out(n) for n in page.items], next_cursor=encode_cursor(page.last_key)
    )
