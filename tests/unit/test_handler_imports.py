"""A function's cold start imports only what that function uses: each handler module is imported in a
fresh interpreter laid out as Lambda lays it out (bench/coldstart.py), and what it loaded is checked.

With tracing off the X-Ray SDK stays out; boto3 and s3transfer stay out (the clients are botocore's);
Powertools' batch utility, its parser models of every event source and its OpenAPI models stay out of
every function (the API imports the latter when a document is asked for); the functions other than
the API load neither the HTTP API, Powertools' event handler and event classes nor asyncio, those
that send no HTTP request no HTTP client, those that walk no schedule's timing no cron rules, and
those that open no signing secret no cipher."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from bench import coldstart

FUNCTIONS = {f.name: f for f in coldstart.functions()}
EVERYWHERE = (
    "aws_xray_sdk",  # tracing is off
    "aws_lambda_powertools.utilities.parser",  # the SQS records are edgecron.schemas.sqs
    "aws_lambda_powertools.event_handler.openapi.models",  # built for /openapi.json and /docs only
    "boto3",  # the clients are botocore's (edgecron.data.aws), as pynamodb's are
    "s3transfer",  # what boto3 loads eagerly, for transfers the product never makes
    "aws_lambda_powertools.utilities.batch",  # the queue consumers' batches are edgecron.sqs_batch
)
OUTSIDE_THE_API = (
    "asyncio",  # the worker's concurrency is a thread per record
    "aws_lambda_powertools.utilities.data_classes",  # the event classes of every source
    "aws_lambda_powertools.event_handler",
    "edgecron.api",
    "edgecron.schemas.endpoints",  # request models the services name in annotations only
    "edgecron.schemas.events",
    "edgecron.schemas.task_runs",
    "edgecron.schemas.retry_policies",
    "edgecron.schemas.schedules",  # the schedule API's models: the fire pipeline reads domain limits
)
# The HTTP client and the SSRF guard of Endpoint URLs: the worker sends; the API loads them with the
# routes that check URLs or send; the compensation answers CloudFormation through botocore's urllib3;
# the others only read Endpoints.
SENDERS = {"worker"}
HTTP_CLIENT = ("requests", "edgecron.services.http_sender", "edgecron.services.target_guard")
# The cron rules: the scan and the compensation walk schedules' timing, the API parses it; the worker
# and the fan-out and DLQ consumers read and settle schedules, and compute a timing rarely (an edited
# schedule's fire, a new schedule's first window), when they load the rules.
CRON_READERS = {"scan", "compensation", "api"}
CRON = ("croniter", "edgecron.domain.cron")
# The SQS records and the batch runner: only the functions that read a queue build them.
QUEUE_READERS = {"worker", "fanout", "dlq", "fanout_dlq"}
QUEUE_RECORDS = ("edgecron.schemas.sqs", "edgecron.sqs_batch")
# The signing secrets' cipher: the worker opens secrets to sign, the API seals them when it is asked.
CIPHER = ("cryptography",)


@cache
def loaded(name: str, *, tracing: bool = False) -> frozenset[str]:
    """The modules in sys.modules once functions/<name>/app.py is imported in a fresh interpreter."""
    fn = FUNCTIONS[name]
    tree = coldstart.layout(list(FUNCTIONS.values()))
    dirs: list[Path] = [tree.function_dirs[name], tree.layer_dir]
    answer = coldstart.probe(dirs, coldstart.lambda_environment(fn, {}, tracing=tracing), modules=True)
    return frozenset(answer["modules"])


def _under(modules: frozenset[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_every_function_of_the_template_is_checked() -> None:
    assert set(FUNCTIONS) >= {"api", "worker", "scan", "fanout", "dlq", "fanout_dlq", "compensation"}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_handler_imports_no_tracing_sdk_parser_or_openapi_models(name: str) -> None:
    modules = loaded(name)
    assert "app" in modules and "edgecron.observability" in modules  # the handler was imported
    assert _under(modules, EVERYWHERE) == []


def test_the_api_loads_the_routes_of_a_resource_when_a_request_first_asks_for_them() -> None:
    assert _under(loaded("api"), ("edgecron.api.routes", "edgecron.api.mappers")) == []


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - {"api"}))
def test_a_function_other_than_the_api_loads_no_http_api(name: str) -> None:
    assert _under(loaded(name), OUTSIDE_THE_API) == []


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - SENDERS))
def test_a_function_that_sends_no_http_request_loads_no_http_client(name: str) -> None:
    assert _under(loaded(name), HTTP_CLIENT) == []


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - CRON_READERS))
def test_a_function_that_walks_no_schedule_timing_loads_no_cron_rules(name: str) -> None:
    assert _under(loaded(name), CRON) == []


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - QUEUE_READERS))
def test_a_function_that_reads_no_queue_builds_no_sqs_record_model(name: str) -> None:
    assert _under(loaded(name), QUEUE_RECORDS) == []


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - {"worker"}))
def test_only_the_worker_loads_the_signing_secrets_cipher_with_the_function(name: str) -> None:
    assert _under(loaded(name), CIPHER) == []


def test_the_worker_loads_its_http_client_and_cipher_with_the_function_not_with_its_first_delivery() -> None:
    assert "edgecron.services.http_sender" in loaded("worker")
    assert "cryptography.hazmat.primitives.ciphers.aead" in loaded("worker")


def test_with_tracing_on_the_handler_is_traced_by_the_x_ray_sdk() -> None:
    """The other side of the first check: where a deployed function traces, the Tracer is built."""
    assert "aws_xray_sdk.core" in loaded("worker", tracing=True)
