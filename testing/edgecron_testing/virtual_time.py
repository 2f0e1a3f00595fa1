"""Virtual time for in-process tests: the injected clock drives moto's SQS as well, so a delivery
message sent with `DelaySeconds` becomes visible when the test moves the clock past its delay, a
message received and not deleted comes back after its visibility timeout by the same clock, and a
test can run an hour of fires, scans and retries in seconds without sleeping.

`VirtualStack.run_until(t)` moves the clock one second at a time; at every whole minute it invokes
the scan (EventBridge's `rate(1 minute)`), and at every second it hands the visible messages of the
delivery, retry and fan-out queues to their functions, as the event source mappings do."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from moto.sqs import models as sqs_models

from edgecron import clock
from edgecron.sqs_batch import BatchFailed
from edgecron_testing.harness import invoke
from edgecron_testing.inprocess import Pump

SCAN_EVENT = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


@contextmanager
def sqs_on_clock(fixed: clock.FixedClock) -> Iterator[None]:
    """moto's SQS reads `fixed` instead of the wall clock while the block runs (delays, visibility
    timeouts and retention), and the process clock is `fixed`."""
    saved = sqs_models.__dict__["unix_time"], sqs_models.__dict__["unix_time_millis"]

    def unix_time(dt: datetime | None = None) -> float:
        return (dt or fixed.now()).timestamp()

    def unix_time_millis(dt: datetime | None = None) -> float:
        return (dt or fixed.now()).timestamp() * 1000.0

    sqs_models.unix_time, sqs_models.unix_time_millis = unix_time, unix_time_millis  # type: ignore[attr-defined]
    clock.set_clock(fixed)
    try:
        yield
    finally:
        sqs_models.unix_time, sqs_models.unix_time_millis = saved  # type: ignore[attr-defined]
        clock.set_clock(clock.SystemClock())


class VirtualStack:
    """The deployed stack's triggers on a virtual clock: the scan every minute, the queues' consumers
    every second. `scan_down` keeps EventBridge from invoking the scan (an outage)."""

    def __init__(self, fixed: clock.FixedClock) -> None:
        self.clock = fixed
        self.pump = Pump()
        self.scan_down = False
        self.scans: list[dict[str, Any]] = []
        self.after_second: Callable[[datetime], None] | None = None

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def scan(self) -> dict[str, Any]:
        result = dict(invoke("scan", SCAN_EVENT) or {})
        self.scans.append(result)
        return result

    def consume(self) -> int:
        """Hand every message visible now to its function, until none is left."""
        total = 0
        while True:
            n = sum(
                self._once(queue, function, batch)
                for queue, function, batch in (
                    ("FanoutQueue", "fanout", 1),
                    ("DeliveryQueue", "worker", 10),
                    ("DeliveryDLQ", "dlq", 10),  # what SQS gave up on, as the stack's consumers take it
                    ("FanoutDLQ", "fanout_dlq", 1),
                )
            )
            total += n
            if not n:
                return total

    def _once(self, queue: str, function: str, batch: int) -> int:
        """One batch; one whose every record failed raises in the handler, as Lambda reports it,
        and its messages stay in the queue until their visibility timeout (by the clock) ends."""
        try:
            return self.pump.once(queue, function, batch=batch)
        except BatchFailed:
            return 0

    def run_until(self, until: datetime) -> None:
        """Move the clock to `until` a second at a time (whole seconds), scanning at every minute."""
        t = self.now
        while t < until:
            step = min(until, t.replace(microsecond=0) + timedelta(seconds=1))
            self.clock.set(step)
            t = step
            if t.second == 0 and t.microsecond == 0 and not self.scan_down:
                self.scan()
            self.consume()
            if self.after_second is not None:
                self.after_second(t)
