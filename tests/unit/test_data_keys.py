"""The shared conditions and key ranges: one definition of alive, of a time window and of a
compare-and-set, rendered as the DynamoDB expressions every table's queries use; the partition of a
run."""

from __future__ import annotations

from typing import Any

from edgecron import ids
from edgecron.data.keys import (
    RUN_PARTITIONS,
    alive,
    app_run_partitions,
    at_version,
    run_partition,
    time_key,
    time_window,
)
from edgecron.data.models import ScheduleModel, TaskRunModel


def render(condition: Any) -> tuple[str, dict[str, str], dict[str, Any]]:
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    text = condition.serialize(names, values)
    for placeholder, name in ((f"#{i}", n) for i, n in enumerate(names)):
        text = text.replace(placeholder, name)
    return text, names, values


def test_time_keys_sort_as_time() -> None:
    assert time_key(5) == "0000000000005"
    assert sorted([time_key(10_000), time_key(999)]) == [time_key(999), time_key(10_000)]


def test_a_window_spans_the_whole_last_millisecond() -> None:
    text, _, values = render(time_window(TaskRunModel.dead_key, 1_000, 2_000))
    assert "BETWEEN" in text
    assert [v["S"] for v in values.values()] == ["0000000001000", "0000000002000~"]
    assert f"{time_key(2_000)}#run_x" <= "0000000002000~"


def test_open_ended_windows_and_no_window() -> None:
    assert " >= " in render(time_window(TaskRunModel.dead_key, 1_000, None))[0]
    assert " <= " in render(time_window(TaskRunModel.dead_key, None, 2_000))[0]
    assert time_window(TaskRunModel.dead_key, None, None) is None


def test_a_window_takes_the_keys_own_time_prefix() -> None:
    _, _, values = render(time_window(TaskRunModel.dead_key, 7, 7, floor=lambda ms: f"evt_{ms}"))
    assert [v["S"] for v in values.values()] == ["evt_7", "evt_7~"]


def test_alive_keeps_items_without_expiry_and_those_expiring_later() -> None:
    text, names, values = render(alive(TaskRunModel, 5_999))
    assert "attribute_not_exists" in text and "expires_at" in names
    assert [v["N"] for v in values.values()] == ["5"]


def test_compare_and_set_on_the_version_read() -> None:
    assert "attribute_not_exists" in render(at_version(ScheduleModel, None))[0]
    text, _, values = render(at_version(ScheduleModel, 3))
    assert " = " in text and [v["N"] for v in values.values()] == ["3"]


def test_a_runs_partition_is_fixed_by_its_app_and_id_for_the_life_of_a_table() -> None:
    """Every read computes the partition again: a change of the hash or of RUN_PARTITIONS would look
    for a deployed table's runs under the wrong keys."""
    app = "app_01M8T5GXXXVZV035Q5207CMYA2"
    found = [run_partition(app, f"run_01M8T5GXXXVZV035Q5207CMYA{i}") for i in range(3)]
    assert found == [f"{app}#7", f"{app}#3", f"{app}#1"]
    assert RUN_PARTITIONS == 8 and app_run_partitions(app) == [f"{app}#{k}" for k in range(8)]


def test_the_time_a_run_id_or_a_time_floor_starts_with() -> None:
    ms = 1_796_172_082_732
    assert ids.floor_ms(ids.new_id("run", ms)) == ms
    assert ids.floor_ms(ids.time_floor("run", ms)) == ms
    assert ids.floor_ms(ids.time_floor("run", ms + 1)) == ms + 1
    assert ids.floor_ms("~") == 0 and ids.floor_ms("run_") == 0 and ids.floor_ms("run_!!!!!!!!!!") == 0
