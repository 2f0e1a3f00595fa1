"""How a Task Run is stored: it reads back as it was written, the data layer alone sets its partition
and its `wake` and `dead_letters` keys, and every conditional write returns the run as it left it."""

from __future__ import annotations

import dataclasses

from edgecron import ids
from edgecron.data import runs as run_data
from edgecron.data.keys import run_partition
from edgecron.data.models import TaskRunModel
from edgecron.domain.task_runs import TaskRun
from edgecron.domain.vocabulary import RunStatus, Source
from tests.integration.conftest import new_app

NOW = 1_780_000_000_000


def new_run(app_id: str, *, wake_at_ms: int | None) -> TaskRun:
    return run_data.new_run(
        run_id=ids.new_id("run", NOW),
        app_id=app_id,
        endpoint_id="ep_rows",
        source="schedule",
        source_id="sch_rows",
        payload={"n": 1},
        deliver_at_ms=NOW,
        wake_at_ms=wake_at_ms,
        now_ms=NOW,
        fire_at=NOW,
        retry_policy_id="rp_rows",
        uncounted=True,
        settles_fire=True,
    )


def row_of(run: TaskRun) -> TaskRunModel:
    return TaskRunModel.get(run_partition(run.app_id, run.run_id), run.run_id, consistent_read=True)


def test_a_run_reads_back_as_it_was_written() -> None:
    app_id, _ = new_app("run-rows")
    written = new_run(app_id, wake_at_ms=NOW + 300_000)
    assert run_data.put_new(written)
    assert not run_data.put_new(written)  # the same id again is a no-op
    read = run_data.get(app_id, written.run_id, consistent=True)
    assert read == written
    assert isinstance(read.status, RunStatus) and isinstance(read.source, Source)


def test_the_wake_entry_follows_the_run_and_its_shard_is_the_data_layers() -> None:
    app_id, _ = new_app("run-rows-wake")
    sent_now = new_run(app_id, wake_at_ms=None)
    watched = new_run(app_id, wake_at_ms=NOW + 300_000)
    for run in (sent_now, watched):
        assert run_data.put_new(run)
    assert row_of(sent_now).wake_shard is None and not sent_now.has_wake_entry
    row = row_of(watched)
    assert row.app_part == run_partition(app_id, watched.run_id)
    assert row.wake_shard == ids.shard_of(watched.run_id, run_data.get_settings().shards)
    given = run_data.watch(sent_now, NOW + 600_000)
    assert given is not None and given.has_wake_entry and given.wake_at == NOW + 600_000
    assert row_of(sent_now).wake_shard is not None


def test_each_write_returns_the_run_as_it_left_it_and_a_lost_race_returns_none() -> None:
    app_id, _ = new_app("run-rows-writes")
    run = new_run(app_id, wake_at_ms=NOW)
    assert run_data.put_new(run)
    claimed = run_data.claim(app_id, run.run_id, NOW)
    assert claimed is not None and claimed.status == RunStatus.RUNNING and claimed.claim_token
    assert claimed.claimed_from == RunStatus.PENDING and claimed.attempt_count == 1
    assert claimed.payload == {"n": 1} and claimed.retry_policy_id == "rp_rows"
    assert claimed.uncounted  # its worker's final write counts it and clears the mark
    stale = dataclasses.replace(claimed, claim_token="another worker's")
    assert run_data.finish(stale, RunStatus.SUCCESS, NOW + 10) is None  # not this worker's claim
    dead = run_data.finish(
        claimed, RunStatus.DEAD_LETTER, NOW + 10, status_code=500, error="boom", error_kind="http_5xx"
    )
    assert dead is not None and dead.status == RunStatus.DEAD_LETTER and dead.finished_at == NOW + 10
    assert (dead.last_status_code, dead.last_error, dead.last_error_kind) == (500, "boom", "http_5xx")
    assert not dead.has_wake_entry and dead.claim_token is None and not dead.uncounted
    row = row_of(dead)
    assert row.dl_app_id == app_id and row.dead_key is not None and row.wake_shard is None
    replayed = run_data.replay(dead, NOW + 20, NOW + 320_000)
    assert replayed is not None and replayed.status == RunStatus.PENDING and replayed.series == 2
    assert replayed.has_wake_entry and replayed.finished_at is None
    assert row_of(replayed).dl_app_id is None
    assert run_data.replay(dead, NOW + 30, NOW + 330_000) is None  # no longer a dead letter
