"""Integration tests: real handlers in-process against moto, provisioned from template.yaml.

The environment (moto, the provisioned stack, the IAM check, AWS fidelity) is edgecron_testing.inprocess,
imported here before any test module; this file adds the pytest side: fixtures and session checks."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from edgecron import clock
from edgecron_cli.local.iam import Denial
from edgecron_cli.local.iam import observed_matrix as iam_observed_matrix
from edgecron_testing import iam as iam_support
from edgecron_testing.aws_fidelity import TtlDeletion
from edgecron_testing.inprocess import (
    ADMIN_KEY,
    DEFAULT_INDEX_LAG_MS,
    IAM,
    INDEX_TIME,
    PROVISIONED,
    IndexTime,
    Pump,
    app_runs,
    drain_queues,
    new_app,
    queue,
    retire_runs,
    retire_schedules,
)
from edgecron_testing.receiver import Receiver

# what the test modules import from here
__all__ = [
    "ADMIN_KEY",
    "IAM",
    "PROVISIONED",
    "Alerts",
    "Pump",
    "app_runs",
    "drain_queues",
    "new_app",
    "queue",
    "retire_runs",
    "retire_schedules",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "index_lag(ms): how long index reads lag their tables by the injected clock (0 = off)"
    )


@pytest.fixture(autouse=True)
def index_time(request: pytest.FixtureRequest) -> Iterator[IndexTime]:
    """Every test starts with settled indexes and the lag its marker (nearest first) or the default
    sets; the test can settle the indexes or read unlagged through this fixture."""
    marker = request.node.get_closest_marker("index_lag")
    INDEX_TIME.set_lag(float(marker.args[0]) if marker else DEFAULT_INDEX_LAG_MS)
    INDEX_TIME.settle()
    yield INDEX_TIME
    INDEX_TIME.set_lag(DEFAULT_INDEX_LAG_MS)
    INDEX_TIME.settle()


@pytest.fixture
def ttl() -> TtlDeletion:
    """`ttl.sweep()` deletes every item DynamoDB's TTL may have deleted by the injected clock's time."""
    return TtlDeletion()


# ------------------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _no_access_denied() -> Iterator[None]:
    """A call AWS would refuse fails the test, even when the code logs and swallows the error."""
    seen = len(IAM.denials)
    yield
    if len(IAM.denials) > seen:
        pytest.fail(iam_support.describe(IAM.denials[seen:]), pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The session fails on any refused call and on calls the permission matrix does not list.

    Under pytest-xdist each worker hands what its handlers called to the controller, which judges
    (or, recording, writes) the matrix once for the whole run."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["iam_observed"] = iam_observed_matrix(IAM)  # labels: ARNs differ per worker
        workeroutput["iam_denials"] = [denial.as_json() for denial in IAM.denials]
        return
    problems = iam_support.session_problems(IAM, WORKERS_OBSERVED)
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            for problem in problems:
                reporter.write_line(problem, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


WORKERS_OBSERVED: dict[str, list[str]] = {}  # the permission matrix entries xdist workers observed


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """An xdist worker finished: its observed calls and refusals join the controller's check."""
    output = getattr(node, "workeroutput", None) or {}
    for function, entries in output.get("iam_observed", {}).items():
        WORKERS_OBSERVED.setdefault(function, []).extend(entries)
    IAM.denials.extend(Denial(**denial) for denial in output.get("iam_denials", []))


@pytest.fixture(autouse=True)
def _fresh_state() -> Iterator[None]:
    """Empty queues and the real clock for every test (moto's SQS slows down as queues grow)."""
    drain_queues()
    clock.set_clock(clock.SystemClock())
    yield
    clock.set_clock(clock.SystemClock())
    retire_schedules()
    retire_runs()


@pytest.fixture
def admin_key() -> str:
    return ADMIN_KEY


@pytest.fixture
def app_key() -> str:
    return new_app()[1]


@pytest.fixture
def other_app_key() -> str:
    return new_app("other")[1]


@pytest.fixture
def pump() -> Pump:
    return Pump()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A real HTTP receiver on 127.0.0.1 that answers as scripted and records what arrived."""
    r = Receiver()
    yield r
    r.close()


Alerts = Callable[[], list[dict[str, Any]]]


@pytest.fixture
def alerts() -> Iterator[Alerts]:
    """What reaches the alerts topic, through a queue subscribed to it for this test."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    sns = boto3.client("sns", region_name="us-east-1")
    url = sqs.create_queue(QueueName=f"alerts-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    subscription = sns.subscribe(
        TopicArn=PROVISIONED.topics["AlertsTopic"],
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true"},
    )["SubscriptionArn"]

    def received() -> list[dict[str, Any]]:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        return [json.loads(m["Body"]) for m in got.get("Messages", [])]

    yield received
    sns.unsubscribe(SubscriptionArn=subscription)
    sqs.delete_queue(QueueUrl=url)
