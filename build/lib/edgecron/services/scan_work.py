"""How a scan tick spends its time: a budget from the Lambda context's remaining time, shared fairly
between the kinds of work (schedules, due runs and retries, interrupted Fires), so a burst of one
kind never stalls the others for every tenant; what is left is picked up by the next tick."""

from __future__ import annotations

from collections.abc import Callable, Generator

from edgecron import clock
from edgecron.observability import SCAN_ITEM_FAILURES, count, logger

RESERVE_MS = 10_000  # stop starting work this long before the timeout: sends and the report remain
DEFAULT_BUDGET_MS = 45_000  # a scan with no Lambda context (the local stack, tests)

Work = Generator[None, None, None]  # one kind of work; each step handles one item


class Budget:
    """The milliseconds a scan may still spend before it stops starting new items."""

    def __init__(self, remaining_ms: Callable[[], float], reserve_ms: int = RESERVE_MS) -> None:
        self._remaining = remaining_ms
        self._reserve = reserve_ms

    @classmethod
    def until(cls, deadline: float) -> Budget:
        """Until a `clock.monotonic()` deadline."""
        return cls(lambda: (deadline - clock.monotonic()) * 1000, reserve_ms=0)

    @classmethod
    def of(cls, ms: float) -> Budget:
        return cls.until(clock.monotonic() + ms / 1000)

    def left_ms(self) -> float:
        return self._remaining() - self._reserve

    def exhausted(self) -> bool:
        return self.left_ms() <= 0


def item_failed(kind: str, item_id: str) -> None:
    """One bad item never aborts a tick: log it, count it, go on with the next."""
    logger.exception("scan item failed", extra={"kind": kind, "item": item_id})
    count(SCAN_ITEM_FAILURES)


def run_fairly(kinds: dict[str, Work], budget: Budget) -> list[str]:
    """Step the kinds of work in turn, always the one that has used the least time so far, until all
    are done or the budget is spent. Returns the kinds left unfinished (closed, so they flush)."""
    spent = dict.fromkeys(kinds, 0.0)
    active = dict(kinds)
    turn = 0
    while active and not budget.exhausted():
        name = min(active, key=lambda k: spent[k])
        before = budget.left_ms()
        try:
            next(active[name])
        except StopIteration:
            del active[name]
        except Exception:  # the work itself broke (its index could not be read): the others go on
            item_failed(name, "*")
            del active[name]
        turn += 1
        spent[name] += max(0.0, before - budget.left_ms()) + turn * 1e-9  # ties: take turns
    for work in active.values():
        work.close()
    return list(active)


def first_shard(now_ms: int, shards: int) -> int:
    """Where a tick starts walking the shards: a different one every minute."""
    return (now_ms // 60_000) % shards
