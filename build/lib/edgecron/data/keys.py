"""Conditions and key ranges every table shares, defined once: what "alive" means for an item with
a TTL, the key range of a time window on a time-prefixed sort key, and the compare-and-set check on
an item's ``version``. Data modules build their queries and conditional writes from these."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pynamodb.attributes import Attribute
from pynamodb.models import Model

from edgecron import ids
from edgecron.domain.run_listing import BATCH_GET_MAX

TIME_KEY_DIGITS = 13  # milliseconds since the epoch, zero-padded: string order is time order
AFTER_ANY_SUFFIX = "~"  # sorts after every character a key's suffix uses (ids, '#', digits)


def time_key(ms: int) -> str:
    """The time prefix of a time-ordered sort key (``<ms>#<id>``)."""
    return f"{ms:0{TIME_KEY_DIGITS}d}"


def alive(model: type[Model], now_ms: int) -> Any:
    """The filter that hides expired items (`domain.expiry.is_alive` as a condition): DynamoDB
    deletes TTL-expired items lazily (up to days later, and moto never does), so every read of
    history applies it."""
    table: Any = model  # every history model has `expires_at`
    expires_at = table.expires_at
    return expires_at.does_not_exist() | (expires_at > now_ms // 1000)


def time_window(
    key: Attribute[str], since_ms: int | None, until_ms: int | None, floor: Callable[[int], str] = time_key
) -> Any:
    """The range-key condition for sort keys that start with a time prefix (``floor(ms)``): every key
    from ``since_ms`` through the whole millisecond ``until_ms``; None when neither bound is given."""
    attr: Any = key
    low = None if since_ms is None else floor(since_ms)
    high = None if until_ms is None else floor(until_ms) + AFTER_ANY_SUFFIX
    if low is not None and high is not None:
        return attr.between(low, high)
    if low is not None:
        return attr >= low
    if high is not None:
        return attr <= high
    return None


def at_version(model: type[Model], version: int | None) -> Any:
    """Compare-and-set: the write applies only if the stored ``version`` is still the one read
    (None = an item written before items carried versions)."""
    table: Any = model  # only versioned models are passed
    stored = table.version
    return stored.does_not_exist() if version is None else stored == version


def items_of_entries[T: Model](
    model: type[T],
    keys: Iterable[tuple[str, str]],
    key_of: Callable[[T], tuple[str, str]],
    still_in: Callable[[T], bool],
) -> Iterator[T]:
    """The items a keys-only index's entries name (`keys`, table keys in index order), in that order:
    consistent batch gets of 100. An entry whose item is gone, or whose item no longer belongs where
    the index showed it (`still_in` is false: the index lags the table), is left out."""
    for chunk in itertools.batched(keys, BATCH_GET_MAX):
        found = {key_of(item): item for item in model.batch_get(chunk, consistent_read=True)}
        for key in chunk:
            item = found.get(key)
            if item is not None and still_in(item):
                yield item


# An App's Task Runs are spread over this many partitions of the runs table, by a stable hash of
# the run id: one partition takes ~1,000 writes/s, and a delivery writes its run ~3 times, so a
# single partition would cap an App at ~300 deliveries/s. Fixed for the life of a deployed table
# (a run's partition is computed from it on every read).
RUN_PARTITIONS = 8


def run_partition(app_id: str, run_id: str) -> str:
    """The runs-table partition key of the App's run `run_id` (``<app_id>#<k>``)."""
    return f"{app_id}#{ids.shard_of(run_id, RUN_PARTITIONS)}"


def app_run_partitions(app_id: str) -> list[str]:
    """Every runs-table partition key of the App: listing its runs merges their queries."""
    return [f"{app_id}#{k}" for k in range(RUN_PARTITIONS)]
