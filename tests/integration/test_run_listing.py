"""GET /v1/task-runs over the Task Runs table's partitions of the App (keyed by time-ordered run id,
merged): filters applied to the items read, pages newest first, every run exactly once, cursors that resume
where the last page stopped."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from edgecron import clock
from edgecron.api.pagination import encode_cursor
from edgecron.data import runs as run_data
from edgecron.data.keys import RUN_PARTITIONS, app_run_partitions, run_partition
from edgecron.data.models import TaskRunModel
from edgecron.domain.vocabulary import RunStatus
from edgecron_testing.harness import call_api
from tests.integration.conftest import new_app

STATUSES = [RunStatus.PENDING, RunStatus.SUCCESS, RunStatus.FAILED, RunStatus.CANCELLED]
SOURCES = ["direct", "event", "schedule"]

# Index lag off: these tests list runs right after writing them (the list reads the table, eventually
# consistent).
pytestmark = pytest.mark.index_lag(0)


def seed_runs(app_id: str, n: int, base_ms: int) -> list[TaskRunModel]:
    """n runs created one millisecond apart (the index orders them), with mixed attributes; one in
    ten has expired. Returned newest first, like the list."""
    rng = random.Random(11)
    runs = []
    for i in range(n):
        created = base_ms + i
        run = run_data.new_run(
            run_id=f"run_{app_id[-8:]}{i:05d}",
            app_id=app_id,
            endpoint_id=rng.choice(["ep_A", "ep_B"]),
            source=rng.choice(SOURCES),
            source_id=None,
            payload={"i": i},
            deliver_at_ms=created,
            wake_at_ms=created,
            now_ms=created,
        )
        # finished runs are out of the wake index; keep these out of the scan
        run = replace(run, status=rng.choice(STATUSES), has_wake_entry=False, wake_at=None)
        if i % 10 == 3:
            run = replace(run, expires_at=created // 1000 - 1)
        assert run_data.put_new(run)
        runs.append(run)
    return runs[::-1]


def listed_pages(key: str, query: dict[str, str]) -> list[list[dict[str, object]]]:
    pages = []
    cursor = None
    while True:
        resp = call_api(
            "GET", "/v1/task-runs", key=key, query={**query, **({"cursor": cursor} if cursor else {})}
        )
        assert resp.status == 200, resp.body
        pages.append(resp.body["data"])
        cursor = resp.body["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 200


def test_an_apps_runs_are_spread_over_its_partitions_of_the_table() -> None:
    app_id, _ = new_app("partition")
    now_ms = clock.to_ms(clock.now())
    seed_runs(app_id, 40, now_ms)
    by_partition = {part: list(TaskRunModel.query(part)) for part in app_run_partitions(app_id)}
    runs = [run for found in by_partition.values() for run in found]
    assert len(runs) == 40 and len({run.run_id for run in runs}) == 40
    assert sum(1 for found in by_partition.values() if found) >= RUN_PARTITIONS - 2  # hashed, not one hot key
    for part, found in by_partition.items():
        for run in found:
            assert run.app_id == app_id and run_partition(app_id, run.run_id) == part
            assert run.status and run.created_key is None


def test_filtered_lists_page_newest_first_with_every_run_once() -> None:
    app_id, key = new_app("listing")
    other_id, other_key = new_app("listing-other")
    now_ms = clock.to_ms(clock.now())
    runs = seed_runs(app_id, 230, now_ms - 60_000)
    seed_runs(other_id, 20, now_ms - 60_000)
    alive = [r for r in runs if r.expires_at > now_ms // 1000]
    cases: list[dict[str, str]] = [
        {"limit": "25"},
        {"limit": "7", "status": "failed"},
        {"limit": "10", "status": "success", "endpoint_id": "ep_B"},
        {"limit": "4", "source": "schedule", "status": "pending"},
        {"limit": "100", "endpoint_id": "ep_A", "source": "event"},
        {"limit": "5", "endpoint_id": "ep_NONE"},
    ]
    for query in cases:
        expected = [
            r.run_id
            for r in alive
            if all(getattr(r, name) == value for name, value in query.items() if name != "limit")
        ]
        pages = listed_pages(key, query)
        got = [item["id"] for page in pages for item in page]
        assert got == expected, query  # every matching run once, newest first
        assert all(len(page) <= int(query["limit"]) for page in pages)
        if len(expected) > int(query["limit"]):
            assert len(pages) > 1, query
        for page in pages:
            for item in page:
                assert all(item[name] == value for name, value in query.items() if name != "limit")
                assert "payload" not in item or item["payload"] is None
    other = [item["id"] for page in listed_pages(other_key, {"limit": "50"}) for item in page]
    assert len(other) == 18 and not set(other) & {r.run_id for r in runs}  # tenant isolation


def test_a_page_stops_after_its_key_budget_and_resumes_after_it() -> None:
    app_id, _ = new_app("budget")
    now_ms = clock.to_ms(clock.now())
    runs = seed_runs(app_id, 120, now_ms - 60_000)
    wanted = [r.run_id for r in runs if r.status == RunStatus.FAILED and r.expires_at > now_ms // 1000]
    pages, cursor = [], None
    while True:
        page = run_data.list_page(app_id, 3, cursor, now_ms, status=RunStatus.FAILED, max_keys=15)
        pages.append([r.run_id for r in page.items])
        cursor = page.last_key
        if cursor is None:
            break
        assert set(cursor) == {"run_id", "app_id"} and cursor["app_id"] == {"S": app_id}
    assert [run_id for page in pages for run_id in page] == wanted
    assert len(pages) >= 120 // 15  # no page read more than 15 runs
    assert any(len(page) < 3 for page in pages[:-1])  # some stopped on the budget, not on the limit


def test_a_run_listed_reflects_its_latest_state() -> None:
    """The list shows the item as it is now."""
    app_id, key = new_app("fresh")
    now_ms = clock.to_ms(clock.now())
    (run,) = seed_runs(app_id, 1, now_ms - 1_000)
    TaskRunModel(run_partition(app_id, run.run_id), run.run_id).update(
        actions=[TaskRunModel.status.set(RunStatus.DEAD_LETTER)]
    )
    listed = call_api("GET", "/v1/task-runs", key=key, query={"status": "dead_letter"}).body["data"]
    assert [r["id"] for r in listed] == [run.run_id]
    assert call_api("GET", "/v1/task-runs", key=key, query={"status": RunStatus.PENDING}).body["data"] == []


def test_a_cursor_that_names_no_run_or_another_app_is_a_400_and_a_position_lists_only_the_callers_runs() -> (
    None
):
    app_a, key_a = new_app("cursor-a")
    app_b, _ = new_app("cursor-b")
    now_ms = clock.to_ms(clock.now())
    a_runs = seed_runs(app_a, 3, now_ms - 1_000)
    (b_run,) = seed_runs(app_b, 1, now_ms - 500)
    for tampered in (
        {"app_id": {"S": app_a}},  # no position
        {"app_id": {"S": app_a}, "run_id": {"N": "1"}},  # a position that is no run id
        {"app_id": {"S": app_b}, "run_id": {"S": b_run.run_id}},  # another App's
    ):
        resp = call_api("GET", "/v1/task-runs", key=key_a, query={"cursor": encode_cursor(tampered)})
        assert resp.status == 400 and resp.body["error"]["field"] == "cursor", (tampered, resp.body)
    # a position taken from another App's run id only says where to resume in the caller's runs
    after_b = encode_cursor({"app_id": {"S": app_a}, "run_id": {"S": "run_" + "z" * 26}})
    listed = call_api("GET", "/v1/task-runs", key=key_a, query={"cursor": after_b}).body["data"]
    assert [r["id"] for r in listed] == [run.run_id for run in a_runs]
