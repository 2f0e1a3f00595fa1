"""The shared conditions and key ranges: one definition of alive, of a time window and of a
compare-and-set, rendered as the DynamoDB expressions every table's queries use."""

from __future__ import annotations

from typing import Any

from edgecron.data.keys import alive, at_version, time_key, time_window
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
