"""The precision benchmark's delivered rate: requests of known fires inside the window, per second."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.precision import delivered_rate, undelivered_fates


@dataclass
class Arrival:
    at: float
    headers: dict[str, str] = field(default_factory=dict)


def test_the_delivered_rate_counts_known_fires_that_arrived_inside_the_window() -> None:
    fire_of = {"run_a": ("s", 1, 0.0), "run_b": ("s", 2, 0.0)}
    arrivals = [
        Arrival(100.0, {"webhook-id": "run_a"}),  # the window's first instant counts
        Arrival(104.5, {"webhook-id": "run_b"}),
        Arrival(104.9, {"webhook-id": "someone_else"}),  # not a fire of this measurement
        Arrival(104.9),
        Arrival(105.0, {"webhook-id": "run_a"}),  # the window's end does not
        Arrival(99.9, {"webhook-id": "run_b"}),
    ]
    assert delivered_rate(arrivals, fire_of, 100.0, 105.0) == 2 / 5


def test_an_empty_window_has_no_rate() -> None:
    assert delivered_rate([Arrival(1.0, {"webhook-id": "run_a"})], {"run_a": ()}, 5.0, 5.0) == 0.0


def test_a_fire_cancelled_after_the_pause_counts_at_its_lag_and_only_others_are_missing() -> None:
    pause_sent = {"s": 100.0}
    undelivered = {
        # cancelled by the pause itself, and by a worker that found the schedule paused
        ("s", 98): {"status": "cancelled", "finished_at": "1970-01-01T00:01:40.500+00:00"},
        ("s", 99): {"status": "cancelled", "finished_at": "1970-01-01T00:01:43+00:00"},
        ("s", 40): {"http_status": 404},  # no run at all
        ("s", 97): {"status": "failed", "finished_at": "1970-01-01T00:01:41+00:00"},
        ("s", 96): {"status": "cancelled", "finished_at": "1970-01-01T00:01:39+00:00"},  # before the pause
    }
    cancelled, missing = undelivered_fates(undelivered, pause_sent)
    assert cancelled == {("s", 98): 2.5, ("s", 99): 4.0}
    assert [m["before_pause_s"] for m in missing] == [60.0, 4.0, 3.0]
    assert missing[0]["run"] == {"http_status": 404}
    assert missing[2]["run"]["status"] == "failed"
