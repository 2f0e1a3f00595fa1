"""Schedules bound to every Endpoint of the App (endpoint_ids empty): each fire is fanned out page by
page like an Event, so neither the Fire nor any other item grows with the number of Endpoints."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgecron import clock, ids
from edgecron.data import fires as fire_data
from edgecron.data import runs as run_data
from edgecron.data import schedules as schedule_data
from edgecron.data.models import EndpointModel, FireModel
from edgecron.data.queues import DeliveryMessage
from edgecron.domain.vocabulary import RunStatus
from edgecron.services import fanout
from edgecron.services.fires import dispatch
from edgecron_testing import faults
from edgecron_testing.harness import call_api, invoke, load_event, sqs_event
from edgecron_testing.receiver import Receiver
from tests.integration.conftest import Pump, app_runs, drain_queues, new_app, queue

T0 = datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def bulk_endpoints(app_id: str, count: int, url: str, *, active: bool = True) -> set[str]:
    """Endpoints written straight to the table in batches (thousands of API calls test only the API)."""
    now_ms = clock.to_ms(clock.now())
    created = set()
    with EndpointModel.batch_write() as batch:
        for _ in range(count):
            ep = EndpointModel(
                app_id=app_id,
                endpoint_id=ids.new_id("ep", now_ms),
                url=url,
                active=active,
                created_at=now_ms,
                updated_at=now_ms,
            )
            batch.save(ep)
            created.add(ep.endpoint_id)
    return created


def dropped_deliveries() -> int:
    """Discard the DeliveryQueue's messages (these runs are checked in DynamoDB, not delivered)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    q = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].queues[queue("DeliveryQueue").name]
    n = len(q._messages) + len(q._pending_messages)
    q._messages.clear()
    q._pending_messages.clear()
    return n


def fan_out_pages(pump: Pump, *, drop: bool = True) -> tuple[int, int]:
    """Run the fan-out function one page at a time until its queue is empty: (pages, deliveries sent)."""
    pages = sent = 0
    while pump.once("FanoutQueue", "fanout", batch=1):
        pages += 1
        if drop:
            sent += dropped_deliveries()
    return pages, sent


@pytest.mark.slow  # 10,000 conditional puts through in-process moto: minutes on a shared machine
@pytest.mark.timeout(1800)
def test_a_fire_for_10000_endpoints_is_created_and_fanned_out_in_bounded_pages(pump: Pump) -> None:
    started = time.monotonic()
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("broadcast-10k")
    endpoints = bulk_endpoints(app_id, 10_000, "http://127.0.0.1:9/bulk")
    inactive = bulk_endpoints(app_id, 50, "http://127.0.0.1:9/off", active=False)
    bystander, _ = new_app("broadcast-bystander")
    others = bulk_endpoints(bystander, 5, "http://127.0.0.1:9/other")

    # the first fire (12:01:00) is inside the look-ahead: the create dispatches it at once
    resp = call_api("POST", "/v1/schedules", key=key, body={"cron": "* * * * *", "payload": {"k": 1}})
    assert resp.status == 201, resp.body
    schedule_id = resp.body["id"]
    fire_at = clock.to_ms(T0 + timedelta(seconds=30))
    [fire] = list(FireModel.query(schedule_id))
    assert int(fire.fire_at) == fire_at and fire.status == "SCHEDULED" and fire.started_at is None
    assert list(fire.run_ids) == [] and list(fire.endpoint_ids) == []

    invoke("scan", load_event("scan.json"))  # a scan meanwhile finds nothing to do twice
    print(f"created in {time.monotonic() - started:.0f} s")
    pages, sent = fan_out_pages(pump)
    print(f"fanned out in {time.monotonic() - started:.0f} s")
    assert pages == 11  # 10,050 Endpoints in pages of 1,000
    assert sent == 10_000

    fire = fire_data.get(schedule_id, fire_at)
    assert fire is not None and fire.started_at is not None and fire.status == "SCHEDULED"
    assert int(fire.run_count) == 10_000 and int(fire.page_count) == 11
    listed: list[str] = []
    for page in fire_data.run_id_pages(fire):
        assert len(page) <= 1_000
        listed.extend(page)
    expected = {dispatch.run_id_for(schedule_id, fire_at, ep) for ep in endpoints}
    assert len(listed) == 10_000 and set(listed) == expected
    runs = run_data.get_many(app_id, listed)
    assert len(runs) == 10_000 and {r.endpoint_id for r in runs} == endpoints
    assert not {r.endpoint_id for r in runs} & (inactive | others)
    assert all(r.status == "pending" and r.fire_at == fire_at and r.payload == {"k": 1} for r in runs)
    assert all(r.app_id == app_id for r in runs)
    assert int(fire_data.get(schedule_id, fire_at).run_count) == 10_000  # type: ignore[union-attr]

    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.next_fire_at == fire_at + 60_000
    fixed.advance(60)  # the next scan dispatches the next fire the same way
    invoke("scan", load_event("scan.json"))
    assert len(list(FireModel.query(schedule_id))) == 2
    # a broadcast fire is billed by the record of its first page: the second's is still queued
    assert call_api("GET", "/v1/usage", key=key, query={"month": "2026-06"}).body["schedule"] == 1
    drain_queues()
    print(f"10,000-endpoint broadcast fire: {time.monotonic() - started:.0f} s")


def api_endpoints(key: str, count: int, url: str) -> set[str]:
    """Endpoints created through the API (with signing secrets), for tests that deliver."""
    created = set()
    for _ in range(count):
        resp = call_api("POST", "/v1/endpoints", key=key, body={"url": url})
        assert resp.status == 201, resp.body
        created.add(resp.body["id"])
    return created


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 60 Endpoints, so a few Endpoints make several pages."""
    monkeypatch.setattr(fanout, "FIRE_PAGE_SIZE", 60)


def test_a_paged_fire_delivers_to_every_endpoint_and_settles_once(
    receiver: Receiver, pump: Pump, small_pages: None
) -> None:
    app_id, key = new_app("broadcast-small")
    endpoints = api_endpoints(key, 150, receiver.url("/all"))
    fire = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    resp = call_api(
        "POST",
        "/v1/schedules",
        key=key,
        body={"cron": f"{fire.second} {fire.minute} {fire.hour} * * *", "payload": {"hello": "all"}},
    )
    assert resp.status == 201, resp.body
    schedule_id = resp.body["id"]
    assert fan_out_pages(pump, drop=False)[0] == 3  # 60 + 60 + 30
    pump.deliveries(quiet_for=max(1.0, fire.timestamp() - datetime.now(UTC).timestamp() + 1.5), timeout=120)
    got = receiver.received("/all")
    assert len(got) == 150 and len({r.headers["webhook-id"] for r in got}) == 150
    assert all(r.at >= fire.timestamp() - 0.05 for r in got)  # not before the fire second
    [stored] = list(FireModel.query(schedule_id))
    assert stored.status == "COMPLETED" and int(stored.run_count) == 150 and int(stored.page_count) == 3
    assert {r.endpoint_id for r in app_runs(app_id)} == endpoints
    assert {r.status for r in app_runs(app_id)} == {"success"}
    history = call_api("GET", f"/v1/schedules/{schedule_id}/fires", key=key).body["data"]
    assert [f["status"] for f in history] == ["COMPLETED"]
    assert call_api("POST", f"/v1/schedules/{schedule_id}/pause", key=key).status == 200


def test_pausing_during_a_paged_fire_stops_its_remaining_pages_at_its_time(
    receiver: Receiver, pump: Pump, small_pages: None
) -> None:
    """A page that finds the schedule paused waits for the fire's time (a resume before it would
    deliver the fire); at that time, still paused, it stops the chain and the Fire is CANCELLED."""
    app_id, key = new_app("broadcast-pause")
    api_endpoints(key, 130, receiver.url("/p"))
    fire = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    resp = call_api(
        "POST", "/v1/schedules", key=key, body={"cron": f"{fire.second} {fire.minute} {fire.hour} * * *"}
    )
    schedule_id = resp.body["id"]
    assert pump.once("FanoutQueue", "fanout", batch=1) == 1  # the first page
    paused = call_api("POST", f"/v1/schedules/{schedule_id}/pause", key=key)
    assert paused.status == 200
    fan_out_pages(pump, drop=False)  # the next page waits for the fire's time
    pump.deliveries(quiet_for=max(1.0, fire.timestamp() - datetime.now(UTC).timestamp() + 1.5))
    fan_out_pages(pump, drop=False)  # the fire's time came: still paused, the chain stops
    pump.deliveries(quiet_for=1.0)
    assert receiver.received("/p") == []
    runs: list[Any] = app_runs(app_id)
    assert len(runs) == 60 and all(r.status == "cancelled" for r in runs)  # the first page's
    assert [f.status for f in FireModel.query(schedule_id)] == ["CANCELLED"]


def test_a_broadcast_fire_with_no_active_endpoint_completes(pump: Pump, small_pages: None) -> None:
    app_id, key = new_app("broadcast-none")
    bulk_endpoints(app_id, 70, "http://127.0.0.1:9/off", active=False)
    fire = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=30)
    resp = call_api(
        "POST", "/v1/schedules", key=key, body={"cron": f"{fire.second} {fire.minute} {fire.hour} * * *"}
    )
    assert fan_out_pages(pump)[0] == 2
    [stored] = list(FireModel.query(resp.body["id"]))
    assert stored.status == "COMPLETED" and stored.error == "no active endpoints at fire time"
    assert app_runs(app_id) == []
    call_api("POST", f"/v1/schedules/{resp.body['id']}/pause", key=key)


def test_a_broadcast_fire_whose_fan_out_message_was_lost_is_resumed_by_the_scan(
    pump: Pump, small_pages: None
) -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("broadcast-lost")
    endpoints = bulk_endpoints(app_id, 150, "http://127.0.0.1:9/lost")
    resp = call_api("POST", "/v1/schedules", key=key, body={"cron": "* * * * *"})
    schedule_id = resp.body["id"]
    fire_at = clock.to_ms(T0 + timedelta(seconds=30))
    assert pump.once("FanoutQueue", "fanout", batch=1) == 1  # page 0; then page 1's message is lost
    drain_queues()
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.next_fire_at == fire_at + 60_000  # the schedule moved on
    fixed.advance(70)  # 40 s after the fire time, no page recorded for 70 s
    invoke("scan", load_event("scan.json"))
    assert fan_out_pages(pump)[0] == 2 + 3  # pages 1 and 2 from where it stopped; the next fire's 3
    fire = fire_data.get(schedule_id, fire_at)
    assert fire is not None and fire.started_at is not None and int(fire.run_count) == 150
    listed = [rid for page in fire_data.run_id_pages(fire) for rid in page]
    assert sorted(listed) == sorted(dispatch.run_id_for(schedule_id, fire_at, ep) for ep in endpoints)
    drain_queues()


def test_a_broadcast_fire_whose_fan_out_died_fails_and_counts_toward_auto_pause(pump: Pump) -> None:
    """A fan-out page SQS gave up on reaches the fan-out DLQ consumer: the Fire settles FAILED with
    the reason, and as the third failed fire in a row it pauses the schedule and alerts."""
    from edgecron.data.models import NotificationModel, ScheduleModel

    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("broadcast-dead")
    bulk_endpoints(app_id, 3, "http://127.0.0.1:9/dead")
    ops = {"url": "http://127.0.0.1:9/ops", "filter_events": ["edgecron.schedule.*"]}
    assert call_api("POST", "/v1/endpoints", key=key, body=ops).status == 201
    schedule_id = call_api("POST", "/v1/schedules", key=key, body={"cron": "0 0 1 1 *"}).body["id"]
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.next_fire_at is not None
    ScheduleModel(app_id=app_id, schedule_id=schedule_id).update(
        actions=[ScheduleModel.consecutive_failures.set(2)]
    )
    fire_at = int(stored.next_fire_at)
    fixed.set(datetime.fromtimestamp(fire_at / 1000, UTC) - timedelta(seconds=30))
    invoke("scan", load_event("scan.json"))
    assert pump.once("FanoutQueue", "fanout_dlq", batch=1) == 1  # as if every fan-out attempt failed
    fire = fire_data.get(schedule_id, fire_at)
    assert fire is not None and fire.status == "FAILED" and "fan-out stopped at page 0" in str(fire.error)
    paused = schedule_data.get_timed(app_id, schedule_id)
    assert paused is not None and paused.status == "PAUSED"
    kinds = [n.kind for n in NotificationModel.query(app_id)]
    assert "SCHEDULE_AUTO_PAUSED" in kinds
    events = call_api("GET", "/v1/events", key=key).body["data"]
    assert [e["name"] for e in events] == ["edgecron.schedule.paused"]
    drain_queues()


def test_a_poisoned_run_of_a_broadcast_fire_is_a_dead_letter_and_settles_its_fire(pump: Pump) -> None:
    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("broadcast-poison")
    bulk_endpoints(app_id, 1, "http://127.0.0.1:9/poison")
    schedule_id = call_api("POST", "/v1/schedules", key=key, body={"cron": "0 0 1 1 *"}).body["id"]
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.next_fire_at is not None
    fire_at = int(stored.next_fire_at)
    fixed.set(datetime.fromtimestamp(fire_at / 1000, UTC) - timedelta(seconds=30))
    invoke("scan", load_event("scan.json"))
    assert fan_out_pages(pump)[0] == 1
    [run] = [r for r in app_runs(app_id) if r.source == "schedule"]
    fixed.set(datetime.fromtimestamp(fire_at / 1000, UTC) + timedelta(seconds=5))
    poisoned = {  # the run's delivery message, as SQS moves it to the DLQ after every worker failed
        "MessageId": "m-1",
        "ReceiptHandle": "r-1",
        "Body": DeliveryMessage(run.run_id, app_id).body(),
        "Attributes": {"ApproximateReceiveCount": "6"},
    }
    invoke("dlq", sqs_event([poisoned], queue("DeliveryDLQ").arn))
    [run] = [r for r in app_runs(app_id) if r.source == "schedule"]
    assert run.status == "dead_letter"
    fire = fire_data.get(schedule_id, fire_at)
    assert fire is not None and fire.status == "FAILED"
    drain_queues()


def test_an_auto_pause_from_a_dead_fan_out_cancels_the_runs_of_another_open_broadcast_fire(
    pump: Pump,
) -> None:
    """The fan-out DLQ consumer settles the third failed Fire in a row: the auto-pause cancels the
    waiting runs of the schedule's other open broadcast Fire, read page by page."""
    from edgecron.data.models import ScheduleModel

    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("broadcast-dead-pause")
    bulk_endpoints(app_id, 2, "http://127.0.0.1:9/dead-pause")
    schedule_id = call_api("POST", "/v1/schedules", key=key, body={"cron": "* * * * *"}).body["id"]
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.last_fire_at is not None
    first = int(stored.last_fire_at)  # dispatched by the create: its page 0 is queued
    ScheduleModel(app_id=app_id, schedule_id=schedule_id).update(
        actions=[ScheduleModel.consecutive_failures.set(2)]
    )
    assert pump.once("FanoutQueue", "fanout", batch=1) == 1  # the first Fire's runs exist, waiting
    dropped_deliveries()
    fixed.advance(30)
    invoke("scan", load_event("scan.json"))  # the next Fire: its page 0 is queued
    assert pump.once("FanoutQueue", "fanout_dlq", batch=1) == 1  # as if every fan-out attempt failed
    paused = schedule_data.get_timed(app_id, schedule_id)
    assert paused is not None and paused.status == "PAUSED"
    fire = fire_data.get(schedule_id, first)
    assert fire is not None and fire.status == "CANCELLED"
    runs = [r for r in app_runs(app_id) if r.fire_at == first]
    assert len(runs) == 2 and {r.status for r in runs} == {"cancelled"}
    drain_queues()


def test_a_broadcast_fire_settles_from_a_counter_without_rereading_its_runs_on_each_finish(
    pump: Pump, small_pages: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each finished run of a broadcast Fire is counted on the Fire; its runs are read once, when
    the last one finishes, so settling a Fire of n runs reads O(n) runs, not O(n^2)."""
    from edgecron.services.fires import settle

    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("broadcast-counter")
    bulk_endpoints(app_id, 240, "http://127.0.0.1:9/counter")
    schedule_id = call_api("POST", "/v1/schedules", key=key, body={"cron": "0 0 1 1 *"}).body["id"]
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.next_fire_at is not None
    fire_at = int(stored.next_fire_at)
    fixed.set(datetime.fromtimestamp(fire_at / 1000, UTC) - timedelta(seconds=30))
    invoke("scan", load_event("scan.json"))
    assert fan_out_pages(pump)[0] == 4  # 60 endpoints a page
    fixed.set(datetime.fromtimestamp(fire_at / 1000, UTC))
    read = 0
    real_get_many = run_data.get_many

    def counting_get_many(app_id: str, run_ids: list[str], **kwargs: Any) -> list[Any]:
        nonlocal read
        read += len(run_ids)
        return real_get_many(app_id, run_ids, **kwargs)

    monkeypatch.setattr(run_data, "get_many", counting_get_many)
    runs = sorted((r for r in app_runs(app_id) if r.source == "schedule"), key=lambda r: r.run_id)
    assert len(runs) == 240
    now_ms = clock.to_ms(clock.now())
    for run in runs:
        claimed = run_data.claim(app_id, run.run_id, now_ms)
        assert claimed is not None
        assert run_data.finish(claimed, RunStatus.SUCCESS, now_ms, status_code=200)
        settle.run_settled(claimed, RunStatus.SUCCESS, now_ms)
    fire = fire_data.get(schedule_id, fire_at)
    assert fire is not None and fire.status == "COMPLETED"
    assert read <= 2 * len(runs)
    drain_queues()


class WorkerDied(Exception):
    pass


def test_a_broadcast_fire_whose_worker_died_right_after_counting_its_last_run_settles_on_redelivery(
    receiver: Receiver, pump: Pump, small_pages: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker that finished the Fire's last run counts it and dies before settling the Fire; the
    message it held comes back (SQS redelivers what a failed invocation did not delete), the run is
    already final, and that delivery settles the Fire instead of leaving it open."""
    from edgecron.services import delivery

    fixed = clock.FixedClock(T0)
    clock.set_clock(fixed)
    app_id, key = new_app("broadcast-died")
    api_endpoints(key, 2, receiver.url("/died"))
    schedule_id = call_api("POST", "/v1/schedules", key=key, body={"cron": "0 0 1 1 *"}).body["id"]
    stored = schedule_data.get_timed(app_id, schedule_id)
    assert stored is not None and stored.next_fire_at is not None
    fire_at = int(stored.next_fire_at)
    fixed.set(datetime.fromtimestamp(fire_at / 1000, UTC) - timedelta(seconds=30))
    invoke("scan", load_event("scan.json"))
    assert fan_out_pages(pump)[0] == 1
    fixed.set(datetime.fromtimestamp(fire_at / 1000, UTC))
    first, last = sorted(r.run_id for r in app_runs(app_id) if r.source == "schedule")
    assert delivery.deliver(first, app_id).outcome == "success"
    real_count = fire_data.count_settled_runs

    def count_then_die(fire: FireModel, n: int = 1) -> bool:
        real_count(fire, n)
        raise WorkerDied("after counting the run")

    monkeypatch.setattr(fire_data, "count_settled_runs", count_then_die)
    with pytest.raises(WorkerDied):
        delivery.deliver(last, app_id)
    monkeypatch.undo()
    fire = fire_data.get(schedule_id, fire_at)
    assert fire is not None and fire.status == "SCHEDULED" and int(fire.settled_runs) == 2
    assert delivery.deliver(last, app_id).outcome == "skipped"  # the redelivered message
    fire = fire_data.get(schedule_id, fire_at)
    assert fire is not None and fire.status == "COMPLETED"
    assert len(receiver.received("/died")) == 2
    drain_queues()


def test_a_broadcast_fire_whose_count_of_a_run_was_lost_is_settled_by_the_scan(
    receiver: Receiver, pump: Pump
) -> None:
    """The worker delivers a run of a broadcast fire and its count of the run's end fails; SQS gives
    the message again, the run is final and nothing counts it, so the Fire would stay open for ever.
    Ten minutes past its time the scan settles it from its runs."""
    app_id, key = new_app("broadcast-count-lost")
    api_endpoints(key, 2, receiver.url("/count-lost"))
    fixed = clock.FixedClock(datetime.now(UTC).replace(microsecond=0))
    clock.set_clock(fixed)
    fire = fixed.now() + timedelta(seconds=2)
    resp = call_api(
        "POST", "/v1/schedules", key=key, body={"cron": f"{fire.second} {fire.minute} {fire.hour} * * *"}
    )
    assert resp.status == 201, resp.body
    schedule_id = resp.body["id"]
    fan_out_pages(pump, drop=False)
    fixed.advance(3)
    faults.let_sqs_time_pass()  # the runs' messages were delayed to the fire time
    with faults.Faults() as f:
        f.on(
            "dynamodb",
            "UpdateItem",
            kind=faults.BEFORE,
            function="worker",
            table="FiresTable",
            when=lambda call: "settled_runs" in str(call.params),
        )
        pump.deliveries()
    assert f.count(faults.BEFORE) == 1
    faults.return_in_flight()
    pump.deliveries()
    assert {r.status for r in app_runs(app_id)} == {"success"}
    [stored] = list(FireModel.query(schedule_id))
    assert stored.status == "SCHEDULED"  # one run's end was never counted
    fixed.advance(11 * 60)
    invoke("scan", load_event("scan.json"))
    [stored] = list(FireModel.query(schedule_id))
    assert stored.status == "COMPLETED"
    history = call_api("GET", f"/v1/schedules/{schedule_id}/fires", key=key).body["data"]
    assert [f["status"] for f in history] == ["COMPLETED"]
