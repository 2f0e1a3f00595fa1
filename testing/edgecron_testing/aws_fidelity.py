"""The integration tests' AWS fidelity: the local stack's limits and index lag (measured on the
injected clock, so no test sleeps for it) and TTL deletion on demand at the injected clock's time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from edgecron_cli.local.consistency import IndexLag
from edgecron_cli.local.fidelity import AwsFidelity
from edgecron_cli.local.moto_server import table_items
from edgecron_cli.local.ttl import TtlSweeper

# How long index reads lag their tables by the injected clock, unless a test module or test says
# otherwise with @pytest.mark.index_lag(ms) (0 turns the lag off).
DEFAULT_TEST_GSI_LAG_MS = 1_000.0


def _clock_ms() -> float:
    from edgecron import clock

    return float(clock.to_ms(clock.now()))


def install_for_tests() -> AwsFidelity:
    """Limits and index lag for every boto3 and PynamoDB call of the test process."""
    return AwsFidelity(IndexLag(DEFAULT_TEST_GSI_LAG_MS, _clock_ms)).install()


class IndexTime:
    """What a test controls of the index lag: its length, catching up at once, reading unlagged."""

    def __init__(self, lag: IndexLag) -> None:
        self._lag = lag

    @property
    def lag_ms(self) -> float:
        return self._lag.lag_ms

    def set_lag(self, lag_ms: float) -> None:
        self._lag.lag_ms = lag_ms

    def settle(self) -> None:
        """Every index catches up with every write so far, whatever the clock says."""
        self._lag.settle()

    def pending(self) -> int:
        return self._lag.pending()

    @contextmanager
    def unlagged(self) -> Iterator[None]:
        """The test's own reads (not the code under test) see the indexes up to date."""
        with self._lag.unlagged():
            yield


class TtlDeletion:
    """Deletes what DynamoDB's TTL would have deleted by the injected clock's time (or `at`)."""

    def __init__(self) -> None:
        import boto3

        self._sweeper = TtlSweeper(boto3.client("dynamodb", region_name="us-east-1"), table_items)

    def sweep(self, at: datetime | None = None) -> int:
        from edgecron import clock

        return self._sweeper.sweep((at or clock.now()).timestamp())

    def tables(self) -> dict[str, Any]:
        return dict(self._sweeper.tables())
