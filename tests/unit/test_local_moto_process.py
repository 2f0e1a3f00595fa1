"""The local stack's moto process and the transport to it, for real: a child process running moto, the
stack's botocore clients answered over its socket (as moto's HTTP server answers, one call at a time,
counted for snapshots), the snapshot and KMS calls, the queue waiter and the SQS pollers that sleep on it,
and the child's lifetime (stopped with the stack, reported when it dies)."""

from __future__ import annotations

import base64
import errno
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import botocore.context
import botocore.handlers
import botocore.useragent
import pytest
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, EndpointConnectionError

from edgecron_cli.local import moto_patches, moto_process
from edgecron_cli.local.event_sources import SqsPoller
from edgecron_cli.local.intrinsics import REGION
from edgecron_cli.local.lambda_runtime import Invocation
from edgecron_cli.local.moto_process import MotoCallError, MotoProcess
from edgecron_cli.local.template import SqsEvent
from edgecron_testing.tables import id_table


def _client(process: MotoProcess, service: str, *, over_http: bool = False, region: str = REGION) -> Any:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region
    )
    client = session.client(
        service,
        endpoint_url=process.endpoint_url,
        config=Config(retries={"max_attempts": 1}, max_pool_connections=32),
    )
    if over_http:
        client.meta.events.unregister("before-send", process.transport)
    return client


def _table(process: MotoProcess) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    _client(process, "dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def _queue(process: MotoProcess, **attributes: str) -> str:
    url: str = _client(process, "sqs").create_queue(
        QueueName=f"q-{uuid.uuid4().hex[:8]}", Attributes=attributes
    )["QueueUrl"]
    return url


def _answered(process: MotoProcess) -> int:
    assert process.transport is not None
    return process.transport.answered


def _without_metadata(answer: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in answer.items() if name != "ResponseMetadata"}


def test_calls_are_answered_over_the_socket_as_moto_s_http_server_answers(moto: MotoProcess) -> None:
    table = _table(moto)
    ddb, over_http = _client(moto, "dynamodb"), _client(moto, "dynamodb", over_http=True)
    before = _answered(moto)
    ddb.put_item(TableName=table, Item={"id": {"S": "a"}, "n": {"N": "1"}, "b": {"B": b"\x00\xff"}})
    got = ddb.get_item(TableName=table, Key={"id": {"S": "a"}})
    described = ddb.describe_table(TableName=table)
    assert _answered(moto) == before + 3
    assert got["Item"] == {"id": {"S": "a"}, "n": {"N": "1"}, "b": {"B": b"\x00\xff"}}
    assert _without_metadata(got) == _without_metadata(
        over_http.get_item(TableName=table, Key={"id": {"S": "a"}})
    )
    assert _without_metadata(described) == _without_metadata(over_http.describe_table(TableName=table))
    assert _answered(moto) == before + 3  # the HTTP client's calls went to moto's HTTP server


def test_queue_urls_name_the_moto_server(moto: MotoProcess) -> None:
    url = _queue(moto)
    assert url.startswith(f"{moto.endpoint_url}/123456789012/q-")
    sqs = _client(moto, "sqs")
    assert sqs.get_queue_url(QueueName=url.rpartition("/")[2])["QueueUrl"] == url
    assert (
        _client(moto, "sqs", over_http=True).get_queue_url(QueueName=url.rpartition("/")[2])["QueueUrl"]
        == url
    )


def test_errors_are_the_same_over_the_socket_and_over_http(moto: MotoProcess) -> None:
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


@pytest.mark.parametrize("mixed", [False, True], ids=["socket", "socket-and-http"])
def test_conditional_writes_stay_atomic_under_concurrency(moto: MotoProcess, mixed: bool) -> None:
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


def test_a_waiting_poller_does_not_hold_up_the_other_calls(moto: MotoProcess) -> None:
    url = _queue(moto)
    table = _table(moto)
    ddb = _client(moto, "dynamodb")
    waited: list[bool | None] = []
    waiter = threading.Thread(target=lambda: waited.append(moto.waiter(url).wait(1.5)))
    waiter.start()
    time.sleep(0.1)
    started = time.monotonic()
    ddb.put_item(TableName=table, Item={"id": {"S": "a"}})
    assert ddb.get_item(TableName=table, Key={"id": {"S": "a"}})["Item"] == {"id": {"S": "a"}}
    assert time.monotonic() - started < 1.0
    waiter.join(5)
    assert waited == [False]


def test_writes_are_counted_and_reads_are_not(moto: MotoProcess) -> None:
    table = _table(moto)
    ddb = _client(moto, "dynamodb")
    before = moto.changes()
    ddb.get_item(TableName=table, Key={"id": {"S": "a"}})
    ddb.query(
        TableName=table,
        KeyConditionExpression="id = :a",
        ExpressionAttributeValues={":a": {"S": "a"}},
    )
    ddb.scan(TableName=table)
    assert moto.changes() == before
    ddb.put_item(TableName=table, Item={"id": {"S": "a"}})
    _client(moto, "dynamodb", over_http=True).delete_item(TableName=table, Key={"id": {"S": "a"}})
    assert moto.changes() == before + 2


_SIGV4_SIGNATURE = re.compile(r"Signature=[0-9a-f]{64}$")


def _authorizations(client: Any) -> list[str]:
    """The Authorization header of every call this client sends, from now on."""
    seen: list[str] = []

    def record(request: Any, **kwargs: Any) -> None:
        value = request.headers.get("Authorization")
        seen.append(value.decode() if isinstance(value, bytes) else str(value))

    client.meta.events.register("before-send", record)
    return seen


def test_calls_over_the_socket_are_not_hashed_and_still_reach_their_region_and_account(
    moto: MotoProcess,
) -> None:
    sqs = _client(moto, "sqs", region="eu-west-1")
    ddb = _client(moto, "dynamodb", region="eu-west-1")
    seen_sqs, seen_ddb = _authorizations(sqs), _authorizations(ddb)
    before = _answered(moto)
    url = sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    assert arn == f"arn:aws:sqs:eu-west-1:123456789012:{url.rpartition('/')[2]}"
    name = id_table(ddb)
    assert name in ddb.list_tables()["TableNames"]
    assert name not in _client(moto, "dynamodb").list_tables()["TableNames"]  # us-east-1
    assert _answered(moto) == before + 5
    seen = seen_sqs + seen_ddb
    assert len(seen) == 4
    assert all(a.endswith(f"Signature={moto_process.UNSIGNED_MARK}") for a in seen)
    assert "Credential=testing/" in seen_sqs[0] and "/eu-west-1/sqs/aws4_request" in seen_sqs[0]
    assert "/eu-west-1/dynamodb/aws4_request" in seen_ddb[0]


def test_calls_to_any_other_endpoint_are_signed_with_sigv4(moto: MotoProcess) -> None:
    signer = moto_process.MotoSigner(Credentials("testing", "testing"), "sqs", "eu-west-1")
    for url in ("https://sqs.eu-west-1.amazonaws.com/", moto.endpoint_url.replace("127.0.0.1", "localhost")):
        request = AWSRequest(method="POST", url=url, data=b"Action=ListQueues", headers={})
        signer.add_auth(request)
        assert _SIGV4_SIGNATURE.search(request.headers["Authorization"]), url
    request = AWSRequest(method="POST", url=moto.endpoint_url + "/", data=b"Action=ListQueues", headers={})
    signer.add_auth(request)
    assert request.headers["Authorization"].endswith(f"Signature={moto_process.UNSIGNED_MARK}")


def test_on_another_moto_release_calls_are_signed_as_before_and_one_warning_says_so(
    moto: MotoProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(moto_patches, "found_version", lambda: "5.3.0")
    moto_patches.forget_warnings()
    caplog.set_level(logging.WARNING, logger="edgecron_cli.local")
    other = MotoProcess(0)
    other.start()
    try:
        other.serve_botocore()
        client = _client(other, "dynamodb")
        seen = _authorizations(client)
        client.list_tables()
    finally:
        other.stop()
        moto_patches.forget_warnings()
    (authorization,) = seen
    assert _SIGV4_SIGNATURE.search(authorization)
    warned = [r.getMessage() for r in caplog.records if "SigV4" in r.getMessage()]
    assert len(warned) == 1 and "found moto 5.3.0" in warned[0]


def test_the_kept_user_agent_headers_are_what_botocore_builds(moto: MotoProcess) -> None:
    kept = botocore.useragent.UserAgentString.to_string
    build = kept.build  # type: ignore[attr-defined]
    for service, config in (("sqs", None), ("dynamodb", Config(user_agent_extra="extra/1"))):
        client = boto3.session.Session(region_name=REGION).client(service, config=config)
        creator = client._user_agent_creator
        assert kept(creator) == build(creator) and kept(creator) is kept(creator)
        with botocore.context.start_as_current_context():
            botocore.context.get_context().features.update({"Z", "b"})  # features a call registered
            assert kept(creator) == build(creator) and "Z" in kept(creator)
        assert "extra/1" in kept(creator) if config else "extra/1" not in kept(creator)
        assert kept(creator) == build(creator)


def _as_json(value: Any) -> Any:
    """A boto3 answer's attribute value as DynamoDB JSON (binary in base64)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {name: _as_json(member) for name, member in value.items()}
    if isinstance(value, list):
        return [_as_json(member) for member in value]
    return value


def test_the_snapshot_reads_and_writes_go_to_moto_s_process(moto: MotoProcess) -> None:
    table = _table(moto)
    ddb = _client(moto, "dynamodb")
    items = [
        {"id": {"S": "a"}, "b": {"B": b"\x01"}, "m": {"M": {"n": {"N": "1"}, "l": {"L": [{"BOOL": True}]}}}},
        {"id": {"S": "b"}, "ss": {"SS": ["x", "y"]}, "nothing": {"NULL": True}},
    ]
    moto.put_items(table, [_as_json(item) for item in items])
    scanned = sorted(ddb.scan(TableName=table)["Items"], key=lambda item: item["id"]["S"])
    assert scanned == items
    read = sorted(moto.table_items(table), key=lambda item: item["id"]["S"])
    assert read == [_as_json(item) for item in items]
    with pytest.raises(MotoCallError) as refused:
        moto.put_items("no-such-table", [{"id": {"S": "a"}}])
    assert refused.value.refused and "ResourceNotFoundException" in str(refused.value)


def test_a_partition_and_an_item_by_its_sort_key_are_read_in_moto_s_process(moto: MotoProcess) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    ddb = _client(moto, "dynamodb")
    ddb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for pk, sk in (("p", "2"), ("p", "1"), ("q", "3")):
        ddb.put_item(TableName=name, Item={"pk": {"S": pk}, "sk": {"S": sk}})
    assert [item["sk"] for item in moto.partition_items(name, "p")] == [{"S": "1"}, {"S": "2"}]
    assert moto.item_by_sort_key(name, "3") == {"pk": {"S": "q"}, "sk": {"S": "3"}}
    assert moto.item_by_sort_key(name, "4") is None


def test_kms_keys_keep_their_material_across_the_socket(moto: MotoProcess) -> None:
    kms = _client(moto, "kms")
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    material = moto.kms_key_material(key_id)
    assert isinstance(material, bytes) and len(material) == 32
    restored = str(uuid.uuid4())
    moto.import_kms_key(restored, material, description="restored")
    assert moto.kms_key_material(restored) == material
    assert kms.describe_key(KeyId=restored)["KeyMetadata"]["Description"] == "restored"


def test_stopping_ends_moto_s_process_and_removes_the_hooks() -> None:
    process = MotoProcess(0)
    process.start()
    process.serve_botocore()
    pid, transport = process.pid, process.transport
    assert pid is not None and _alive(pid)
    assert ("before-send", transport) in botocore.handlers.BUILTIN_HANDLERS
    socket_path = process.socket_path
    assert Path(socket_path).exists()
    process.stop()
    assert not _alive(pid)
    assert not Path(socket_path).parent.exists()
    assert ("before-send", transport) not in botocore.handlers.BUILTIN_HANDLERS


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_a_moto_process_that_dies_is_reported_and_calls_fail_fast(caplog: pytest.LogCaptureFixture) -> None:
    exits: list[int] = []
    process = MotoProcess(0, on_exit=exits.append)
    process.start()
    process.serve_botocore()
    try:
        client = _client(process, "dynamodb")
        client.list_tables()
        assert process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while not exits and time.monotonic() < deadline:
            time.sleep(0.02)
        assert exits == [-signal.SIGKILL]
        assert any("exited unexpectedly" in r.getMessage() for r in caplog.records)
        with pytest.raises(EndpointConnectionError):
            client.list_tables()
        with pytest.raises(EndpointConnectionError):
            process.waiter(f"{process.endpoint_url}/123456789012/q").wait(1)
    finally:
        process.stop()


def test_moto_s_process_exits_when_the_stack_s_process_is_killed() -> None:
    script = (
        "import sys, time\n"
        "from edgecron_cli.local.moto_process import MotoProcess\n"
        "process = MotoProcess(0)\n"
        "process.start()\n"
        "print(process.pid, process.socket_path, flush=True)\n"
        "time.sleep(60)\n"
    )
    stack = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert stack.stdout is not None
        pid, socket_path = stack.stdout.readline().split()
        child = int(pid)
        assert _alive(child) and Path(socket_path).exists()
    finally:
        stack.kill()
        stack.wait()
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child)
    assert not Path(socket_path).parent.exists()  # nothing left behind in the temporary directory


def test_a_taken_port_is_refused_as_address_in_use() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = MotoProcess(taken.getsockname()[1])
        with pytest.raises(OSError) as refused:
            process.start()
    assert refused.value.errno == errno.EADDRINUSE


def test_the_waiter_says_when_a_message_is_visible(moto: MotoProcess) -> None:
    sqs = _client(moto, "sqs")
    url = _queue(moto, VisibilityTimeout="1")
    waiter = moto.waiter(url)
    assert moto.waiter(f"{moto.endpoint_url}/123456789012/no-such-queue").wait(0.1) is None
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
    moto: MotoProcess, url: str, container: _Container, until: Callable[[], bool], timeout: float = 10
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
        waiter=moto.waiter(url),
    )
    thread = threading.Thread(target=poller.run)
    thread.start()
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()


def _depth(moto: MotoProcess, url: str) -> int:
    attributes = _client(moto, "sqs").get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def test_a_poller_deletes_what_succeeded_and_keeps_reported_failures(moto: MotoProcess) -> None:
    url = _queue(moto, VisibilityTimeout="1")
    sqs = _client(moto, "sqs")
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)])
    container = _Container(fail_bodies={"m3"})
    _poll(moto, url, container, lambda: len(container.batches) >= 2)
    assert sorted(container.batches[0]) == ["m0", "m1", "m2", "m3", "m4"]
    assert container.batches[1:2] == [["m3"]]  # back after the visibility timeout, alone
    assert _depth(moto, url) == 1


def test_a_function_error_leaves_the_whole_batch(moto: MotoProcess) -> None:
    url = _queue(moto, VisibilityTimeout="30")
    _client(moto, "sqs").send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)]
    )
    container = _Container(raise_error=True)
    _poll(moto, url, container, lambda: False, timeout=0.5)
    assert [sorted(batch) for batch in container.batches] == [["m0", "m1", "m2"]]
    assert _depth(moto, url) == 3


def test_a_delayed_message_is_delivered_after_its_delay_and_not_before(moto: MotoProcess) -> None:
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
