"""The local stack's moto: calls from its own process answered in process, one at a time (conditional writes
stay atomic), counted for snapshots; the queue waiter and the SQS pollers that sleep on it."""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import botocore.handlers
import pytest
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.utilities import dynamo_json_dump

from edgecron_cli.local import moto_patches, moto_server, moto_speedups
from edgecron_cli.local.event_sources import SqsPoller
from edgecron_cli.local.intrinsics import REGION
from edgecron_cli.local.lambda_runtime import Invocation
from edgecron_cli.local.moto_server import LocalMotoServer, QueueWaiter, start_moto
from edgecron_cli.local.template import SqsEvent


@pytest.fixture(scope="module")
def moto() -> Iterator[LocalMotoServer]:
    server = start_moto(0)
    yield server
    server.stop()
    moto_speedups.uninstall()


def _client(server: LocalMotoServer, service: str, *, over_http: bool = False, region: str = REGION) -> Any:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region
    )
    client = session.client(
        service,
        endpoint_url=server.endpoint_url,
        config=Config(retries={"max_attempts": 1}, max_pool_connections=32),
    )
    if over_http:
        client.meta.events.unregister("before-send", server._transport)
    return client


def _table(server: LocalMotoServer) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    _client(server, "dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def _queue(server: LocalMotoServer, **attributes: str) -> str:
    url: str = _client(server, "sqs").create_queue(
        QueueName=f"q-{uuid.uuid4().hex[:8]}", Attributes=attributes
    )["QueueUrl"]
    return url


def test_calls_from_this_process_are_answered_in_process(
    moto: LocalMotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[str] = []
    real = moto_server._answer
    monkeypatch.setattr(
        moto_server,
        "_answer",
        lambda handler, request: answered.append(request.url) or real(handler, request),
    )
    table = _table(moto)
    ddb = _client(moto, "dynamodb")
    ddb.put_item(TableName=table, Item={"id": {"S": "a"}, "n": {"N": "1"}})
    assert ddb.get_item(TableName=table, Key={"id": {"S": "a"}})["Item"]["n"] == {"N": "1"}
    assert len(answered) == 3
    over_http = _client(moto, "dynamodb", over_http=True)
    assert over_http.get_item(TableName=table, Key={"id": {"S": "a"}})["Item"]["n"] == {"N": "1"}
    assert len(answered) == 3


def test_queue_urls_name_the_moto_server(moto: LocalMotoServer) -> None:
    url = _queue(moto)
    assert url.startswith(f"{moto.endpoint_url}/123456789012/q-")
    sqs = _client(moto, "sqs")
    assert sqs.get_queue_url(QueueName=url.rpartition("/")[2])["QueueUrl"] == url
    assert (
        _client(moto, "sqs", over_http=True).get_queue_url(QueueName=url.rpartition("/")[2])["QueueUrl"]
        == url
    )


def test_errors_are_the_same_in_process_and_over_http(moto: LocalMotoServer) -> None:
    table = _table(moto)
    for over_http in (False, True):
        ddb = _client(moto, "dynamodb", over_http=over_http)
        ddb.put_item(TableName=table, Item={"id": {"S": "taken"}})
        with pytest.raises(ClientError) as failed:
            ddb.put_item(
                TableName=table, Item={"id": {"S": "taken"}}, ConditionExpression="attribute_not_exists(id)"
            )
        assert failed.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
        with pytest.raises(ClientError) as missing:
            ddb.get_item(TableName="no-such-table", Key={"id": {"S": "a"}})
        assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
        with pytest.raises(ClientError) as no_queue:
            _client(moto, "sqs", over_http=over_http).get_queue_url(QueueName="no-such-queue")
        assert "NonExistentQueue" in no_queue.value.response["Error"]["Code"]


@pytest.mark.parametrize("mixed", [False, True], ids=["in-process", "in-process-and-http"])
def test_conditional_writes_stay_atomic_under_concurrency(moto: LocalMotoServer, mixed: bool) -> None:
    table = _table(moto)
    clients = [_client(moto, "dynamodb", over_http=mixed and i % 2 == 1) for i in range(2)]

    def claim(i: int) -> bool:
        try:
            clients[i % 2].put_item(
                TableName=table,
                Item={"id": {"S": "run"}, "owner": {"N": str(i)}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "ConditionalCheckFailedException"
            return False
        return True

    def count(i: int) -> None:
        clients[i % 2].update_item(
            TableName=table,
            Key={"id": {"S": "counter"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    with ThreadPoolExecutor(16) as pool:
        wins = list(pool.map(claim, range(32)))
        list(pool.map(count, range(40)))
    assert sum(wins) == 1
    item = clients[0].get_item(TableName=table, Key={"id": {"S": "counter"}}, ConsistentRead=True)["Item"]
    assert item["n"] == {"N": "40"}


def test_writes_are_counted_and_reads_are_not(moto: LocalMotoServer) -> None:
    table = _table(moto)
    ddb = _client(moto, "dynamodb")
    before = moto.changes.value
    ddb.get_item(TableName=table, Key={"id": {"S": "a"}})
    ddb.query(
        TableName=table,
        KeyConditionExpression="id = :a",
        ExpressionAttributeValues={":a": {"S": "a"}},
    )
    ddb.scan(TableName=table)
    assert moto.changes.value == before
    ddb.put_item(TableName=table, Item={"id": {"S": "a"}})
    _client(moto, "dynamodb", over_http=True).delete_item(TableName=table, Key={"id": {"S": "a"}})
    assert moto.changes.value == before + 2


_SIGV4_SIGNATURE = re.compile(r"Signature=[0-9a-f]{64}$")


def _authorizations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Authorization header of every call moto answers in process, from now on."""
    seen: list[str] = []
    real = moto_server._answer

    def answer(handler: Any, request: Any) -> Any:
        seen.append(moto_server._header(request, "Authorization"))
        return real(handler, request)

    monkeypatch.setattr(moto_server, "_answer", answer)
    return seen


def test_in_process_calls_are_not_hashed_and_still_reach_their_region_and_account(
    moto: LocalMotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _authorizations(monkeypatch)
    sqs = _client(moto, "sqs", region="eu-west-1")
    url = sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    assert arn == f"arn:aws:sqs:eu-west-1:123456789012:{url.rpartition('/')[2]}"
    ddb = _client(moto, "dynamodb", region="eu-west-1")
    name = f"t-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    assert name in ddb.list_tables()["TableNames"]
    assert name not in _client(moto, "dynamodb").list_tables()["TableNames"]  # us-east-1
    assert len(seen) == 5
    assert all(a.endswith(f"Signature={moto_server.UNSIGNED_MARK}") for a in seen)
    assert "Credential=testing/" in seen[0] and "/eu-west-1/sqs/aws4_request" in seen[0]
    assert "/eu-west-1/dynamodb/aws4_request" in seen[2]


def test_calls_to_any_other_endpoint_are_signed_with_sigv4(moto: LocalMotoServer) -> None:
    signer = moto_server.InProcessSigner(Credentials("testing", "testing"), "sqs", "eu-west-1")
    for url in ("https://sqs.eu-west-1.amazonaws.com/", moto.endpoint_url.replace("127.0.0.1", "localhost")):
        request = AWSRequest(method="POST", url=url, data=b"Action=ListQueues", headers={})
        signer.add_auth(request)
        assert _SIGV4_SIGNATURE.search(request.headers["Authorization"]), url
    request = AWSRequest(method="POST", url=moto.endpoint_url + "/", data=b"Action=ListQueues", headers={})
    signer.add_auth(request)
    assert request.headers["Authorization"].endswith(f"Signature={moto_server.UNSIGNED_MARK}")


def test_on_another_moto_release_calls_are_signed_as_before_and_one_warning_says_so(
    moto: LocalMotoServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(moto_patches, "found_version", lambda: "5.3.0")
    moto_patches.forget_warnings()
    caplog.set_level(logging.WARNING, logger="edgecron_cli.local")
    seen = _authorizations(monkeypatch)
    other = start_moto(0)
    try:
        _client(other, "dynamodb").list_tables()
    finally:
        other.stop()
        moto_patches.forget_warnings()
    (authorization,) = seen
    assert _SIGV4_SIGNATURE.search(authorization)
    warned = [r.getMessage() for r in caplog.records if "SigV4" in r.getMessage()]
    assert len(warned) == 1 and "found moto 5.3.0" in warned[0]


def _random_value(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    kinds = ["S", "N", "B", "SS", "NS", "BS", "BOOL", "NULL"] + (["M", "L"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind in ("S", "N"):
        return {kind: rng.choice(["0", "-1.5", "ünï", "a b"]) if kind == "S" else str(rng.randint(-9, 99))}
    if kind == "B":
        return {"B": rng.randbytes(rng.randint(1, 5))}
    if kind in ("SS", "NS"):
        return {kind: sorted({str(rng.randint(0, 99)) for _ in range(rng.randint(1, 3))})}
    if kind == "BS":
        return {"BS": list({rng.randbytes(3) for _ in range(rng.randint(1, 3))})}
    if kind == "BOOL":
        return {"BOOL": rng.random() < 0.5}
    if kind == "NULL":
        return {"NULL": True}
    if kind == "M":
        return {"M": {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randint(0, 3))}}
    return {"L": [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]}


def test_snapshot_reads_give_what_moto_serializes(moto: LocalMotoServer) -> None:
    table = _table(moto)
    ddb = _client(moto, "dynamodb")
    rng = random.Random(7)
    for i in range(60):
        item = {f"a{j}": _random_value(rng) for j in range(rng.randint(0, 6))}
        ddb.put_item(TableName=table, Item={"id": {"S": str(i)}, **item})
    moto_table = dynamodb_backends["123456789012"][REGION].get_table(table)
    expected = json.loads(dynamo_json_dump([i.to_json()["Attributes"] for i in moto_table.all_items()]))
    assert moto_server.table_items(table) == expected
    text = json.dumps(expected)
    assert '"B": ' in text and '"BS": ' in text and '"M": {"k0": {"B": ' in text  # binary, nested too


def test_stopping_removes_the_in_process_hook() -> None:
    server = start_moto(0)
    transport = server._transport
    assert ("before-send", transport) in botocore.handlers.BUILTIN_HANDLERS
    server.stop()
    assert ("before-send", transport) not in botocore.handlers.BUILTIN_HANDLERS


def test_the_waiter_says_when_a_message_is_visible(moto: LocalMotoServer) -> None:
    sqs = _client(moto, "sqs")
    url = _queue(moto, VisibilityTimeout="1")
    waiter = QueueWaiter(url)
    assert QueueWaiter(f"{moto.endpoint_url}/123456789012/no-such-queue").wait(0.1) is None
    started = time.monotonic()
    assert waiter.wait(0.3) is False
    assert time.monotonic() - started >= 0.29

    woke: list[float] = []
    thread = threading.Thread(target=lambda: woke.append(time.monotonic()) if waiter.wait(5) else None)
    thread.start()
    time.sleep(0.2)
    sent = time.monotonic()
    sqs.send_message(QueueUrl=url, MessageBody="now")
    thread.join(5)
    assert woke and woke[0] - sent < 0.5

    received = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)["Messages"]
    assert len(received) == 1 and waiter.wait(0) is False
    started = time.monotonic()
    assert waiter.wait(5) is True  # in flight for the 1 s visibility timeout, then visible again
    assert 0.8 <= time.monotonic() - started <= 2.0
    sqs.delete_message(
        QueueUrl=url, ReceiptHandle=sqs.receive_message(QueueUrl=url)["Messages"][0]["ReceiptHandle"]
    )

    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=1)
    started = time.monotonic()
    assert waiter.wait(5) is True
    assert 0.8 <= time.monotonic() - started <= 2.0


class _Container:
    """Stands in for a Lambda container: records each batch, fails the records it is told to."""

    name = "Fake#0"

    def __init__(self, fail_bodies: set[str] | None = None, raise_error: bool = False) -> None:
        self.batches: list[list[str]] = []
        self._fail = fail_bodies or set()
        self._raise = raise_error

    def invoke(self, event: dict[str, Any]) -> Invocation:
        records = event["Records"]
        self.batches.append([record["body"] for record in records])
        if self._raise:
            return Invocation(ok=False, result=None, request_id="r")
        failures = [{"itemIdentifier": r["messageId"]} for r in records if r["body"] in self._fail]
        return Invocation(ok=True, result={"batchItemFailures": failures}, request_id="r")


def _poll(
    moto: LocalMotoServer, url: str, container: _Container, until: Callable[[], bool], timeout: float = 10
) -> None:
    """Run one poller until `until()` holds (or `timeout` s pass)."""
    event = SqsEvent(name="Fake", queue="FakeQueue", batch_size=10, report_batch_item_failures=True)
    stop = threading.Event()
    poller = SqsPoller(
        container,  # type: ignore[arg-type]
        event,
        url,
        "arn:aws:sqs:us-east-1:123456789012:fake",
        _client(moto, "sqs"),
        stop,
        waiter=QueueWaiter(url),
    )
    thread = threading.Thread(target=poller.run)
    thread.start()
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()


def _depth(moto: LocalMotoServer, url: str) -> int:
    attributes = _client(moto, "sqs").get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def test_a_poller_deletes_what_succeeded_and_keeps_reported_failures(moto: LocalMotoServer) -> None:
    url = _queue(moto, VisibilityTimeout="1")
    sqs = _client(moto, "sqs")
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)])
    container = _Container(fail_bodies={"m3"})
    _poll(moto, url, container, lambda: len(container.batches) >= 2)
    assert sorted(container.batches[0]) == ["m0", "m1", "m2", "m3", "m4"]
    assert container.batches[1:2] == [["m3"]]  # back after the visibility timeout, alone
    assert _depth(moto, url) == 1


def test_a_function_error_leaves_the_whole_batch(moto: LocalMotoServer) -> None:
    url = _queue(moto, VisibilityTimeout="30")
    _client(moto, "sqs").send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)]
    )
    container = _Container(raise_error=True)
    _poll(moto, url, container, lambda: False, timeout=0.5)
    assert [sorted(batch) for batch in container.batches] == [["m0", "m1", "m2"]]
    assert _depth(moto, url) == 3


def test_a_delayed_message_is_delivered_after_its_delay_and_not_before(moto: LocalMotoServer) -> None:
    """How soon after its delay it arrives depends on the machine's load; the precision benchmark
    measures that. Here: once, and never early."""
    url = _queue(moto)
    sent = time.monotonic()
    _client(moto, "sqs").send_message(QueueUrl=url, MessageBody="due", DelaySeconds=1)
    container = _Container()
    delivered: list[float] = []
    real_invoke = container.invoke

    def invoke(event: dict[str, Any]) -> Invocation:
        delivered.append(time.monotonic())
        return real_invoke(event)

    container.invoke = invoke  # type: ignore[method-assign]
    _poll(moto, url, container, lambda: bool(delivered))
    assert container.batches == [["due"]]
    assert delivered, "the delayed message was never delivered"
    assert delivered[0] - sent >= 0.9
