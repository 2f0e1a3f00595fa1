"""Delivery statistics (deliveries per bucket, success rate, attempt latency) for dashboards."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel

from edgecron import clock
from edgecron.api.context import bulk_deadline, current_app_id
from edgecron.api.responses import docs, json_response
from edgecron.schemas.common import Id
from edgecron.services import stats as service
from edgecron.services.stats import Window

router = Router()


class Bucket(BaseModel):
    start: str
    delivered: int
    failed: int


class Latency(BaseModel):
    p50: int | None
    p99: int | None
    samples: int


class DeliveryStats(BaseModel):
    window: Window
    since: str
    until: str
    bucket_seconds: int
    buckets: list[Bucket]
    delivered: int
    failed: int
    success_rate: float | None
    latency_ms: Latency
    truncated: bool


@router.get(
    "/v1/stats/deliveries",
    summary="Deliveries per bucket, success rate and attempt latency of the last hour or day",
    tags=["Stats"],
    responses=docs(200, DeliveryStats),
)
def delivery_stats(
    window: Annotated[Window, Query(description="hour (1-minute buckets) or day (15-minute)")] = Window.HOUR,
    endpoint_id: Annotated[Id | None, Query(description="only the runs of this Endpoint")] = None,
) -> Response[str]:
    deadline = bulk_deadline(service.WORK_MS)
    now_ms = clock.to_ms(clock.now())
    return json_response(200, service.delivery_stats(current_app_id(), window, now_ms, endpoint_id, deadline))
