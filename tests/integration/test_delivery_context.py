"""A delivery works from one context read once per attempt, and the deliveries of one worker batch
share their reads: an Endpoint or Retry Policy that several runs of the batch name is read once.
Nothing is kept past the invocation, so an edit is seen by the next batch."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from edgecron.data import endpoints as endpoint_data
from edgecron.data import retry_policies as policy_data
from edgecron_testing.harness import call_api
from edgecron_testing.receiver import Receiver, Reply
from tests.integration.conftest import Pump
from tests.integration.test_delivery import create_run, fast_policy, get_run, make_endpoint


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


class Reads:
    """Counts the reads a data function makes, each still made against DynamoDB."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
        self.keys: list[tuple[Any, ...]] = []
        real: Callable[..., Any] = getattr(module, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.keys.append(args)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


def test_a_batch_reads_each_endpoint_once(
    app_key: str, receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_endpoint(app_key, receiver.url("/first"))
    second = make_endpoint(app_key, receiver.url("/second"))
    runs = [create_run(app_key, first["id"])["id"] for _ in range(8)]
    runs += [create_run(app_key, second["id"])["id"] for _ in range(2)]
    reads = Reads(monkeypatch, endpoint_data, "get")
    assert pump.once("DeliveryQueue", "worker") == 10
    assert sorted(key[1] for key in reads.keys) == sorted([first["id"], second["id"]])
    assert {get_run(app_key, run_id)["status"] for run_id in runs} == {"success"}
    assert (len(receiver.received("/first")), len(receiver.received("/second"))) == (8, 2)


def test_the_next_batch_sees_an_endpoint_edited_meanwhile(
    app_key: str, receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    ep = make_endpoint(app_key, receiver.url("/before"))
    create_run(app_key, ep["id"])
    assert pump.once("DeliveryQueue", "worker") == 1
    patched = call_api(
        "PATCH", f"/v1/endpoints/{ep['id']}", key=app_key, body={"url": receiver.url("/after")}
    )
    assert patched.status == 200, patched.body
    create_run(app_key, ep["id"])
    reads = Reads(monkeypatch, endpoint_data, "get")
    assert pump.once("DeliveryQueue", "worker") == 1
    assert len(reads.keys) == 1
    assert (len(receiver.received("/before")), len(receiver.received("/after"))) == (1, 1)


def test_a_batch_of_failures_reads_their_retry_policy_once(
    app_key: str, receiver: Receiver, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver.script("/down", Reply(503))
    policy = fast_policy(app_key, attempts=3, base_delay_sec=60, max_delay_sec=60)
    ep = make_endpoint(app_key, receiver.url("/down"), retry_policy_id=policy)
    runs = [create_run(app_key, ep["id"])["id"] for _ in range(5)]
    reads = Reads(monkeypatch, policy_data, "get")
    assert pump.once("DeliveryQueue", "worker") == 5
    assert reads.keys == [(reads.keys[0][0], policy)]
    assert {get_run(app_key, run_id)["status"] for run_id in runs} == {"retry_scheduled"}
