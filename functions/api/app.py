"""API function: API Gateway HTTP API → the EdgeCron resolver."""

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from edgecron.api.resolver import build_api
from edgecron.observability import logger, metrics, tracer

api = build_api()


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
# Never capture the response into the trace: it carries API keys and signing secrets shown once.
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return api.resolve(event, context)
