"""The delivery statistics' arithmetic: buckets by finish time, success rate, nearest-rank percentiles."""

from __future__ import annotations

from edgecron.domain.vocabulary import RunStatus
from edgecron.services.stats import RunPoint, Window, percentile, summarize

NOW = 1_772_366_430_000  # 2026-03-01T12:00:30Z


def point(finished_ms: int | None, status: RunStatus) -> RunPoint:
    return RunPoint("run_x", (finished_ms or NOW) - 100, finished_ms, status)


def test_percentiles_are_nearest_rank() -> None:
    values = list(range(1, 101))
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (50, 99, 100)
    assert percentile([7], 0.99) == 7 and percentile([], 0.5) is None


def test_runs_fall_in_the_bucket_of_their_finish_and_unfinished_or_old_ones_are_left_out() -> None:
    runs = [
        point(NOW, RunStatus.SUCCESS),
        point(NOW - 60_000, RunStatus.SUCCESS),
        point(NOW - 60_000, RunStatus.DEAD_LETTER),
        point(NOW - 61 * 60_000, RunStatus.SUCCESS),  # before the window
        point(None, RunStatus.RETRY_SCHEDULED),
        point(NOW, RunStatus.CANCELLED),  # neither delivered nor failed
    ]
    stats = summarize(Window.HOUR, NOW, runs, [10, 20, 30], truncated=False)
    assert stats["since"] == "2026-03-01T11:01:00.000Z" and stats["until"] == "2026-03-01T12:01:00.000Z"
    assert [(b["delivered"], b["failed"]) for b in stats["buckets"][-2:]] == [(1, 1), (1, 0)]
    assert (stats["delivered"], stats["failed"], stats["success_rate"]) == (2, 1, 0.6667)
    assert stats["latency_ms"] == {"p50": 20, "p99": 30, "samples": 3}


def test_nothing_delivered_has_no_success_rate() -> None:
    stats = summarize(Window.DAY, NOW, [], [], truncated=True)
    assert (stats["success_rate"], len(stats["buckets"]), stats["truncated"]) == (None, 96, True)
