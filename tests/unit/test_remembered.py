from __future__ import annotations

from edgecron.data.aws import calling_function
from edgecron.data.remembered import Remembered


def test_an_entry_is_forgotten_once_it_is_older_than_its_age_or_from_the_future() -> None:
    memory: Remembered[str] = Remembered(max_age_ms=30_000)
    memory.put("k", "app_1", 1_000)
    assert memory.get("k", 1_000) == "app_1"
    assert memory.get("k", 30_999) == "app_1"
    assert memory.get("k", 31_000) is None
    assert memory.get("k", 999) is None  # the clock went back
    assert memory.get("other", 1_000) is None


def test_without_an_age_an_entry_stays_until_pushed_out() -> None:
    memory: Remembered[int] = Remembered(max_entries=2)
    memory.put("a", 1, 0)
    memory.put("b", 2, 0)
    memory.put("a", 3, 10**12)  # rewriting an entry makes it the newest
    memory.put("c", 4, 0)
    assert len(memory) == 2
    assert (memory.get("a", 0), memory.get("b", 0), memory.get("c", 0)) == (3, None, 4)


def test_each_caller_has_its_own_entries_and_forget_clears_the_key_for_all() -> None:
    memory: Remembered[str] = Remembered()
    token = calling_function.set("api")
    try:
        memory.put("k", "seen by api", 0)
        memory.put("j", "kept", 0)
    finally:
        calling_function.reset(token)
    token = calling_function.set("worker")
    try:
        assert memory.get("k", 0) is None
        memory.put("k", "seen by worker", 0)
        memory.forget("k")
        assert memory.get("k", 0) is None
    finally:
        calling_function.reset(token)
    token = calling_function.set("api")
    try:
        assert memory.get("k", 0) is None
        assert memory.get("j", 0) == "kept"
        memory.clear()
        assert memory.get("j", 0) is None
    finally:
        calling_function.reset(token)
