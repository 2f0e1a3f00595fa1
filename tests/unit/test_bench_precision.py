"""The precision benchmark's delivered rate: requests of known fires inside the window, per second."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.precision import PAUSE_CANCELS, delivered_rate, undelivered_fates


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


def test_a_fire_the_pause_cancelled_while_it_waited_counts_at_its_lag_and_only_others_are_missing() -> None:
    paused = {"s": 100.0}
    undelivered = {
        ("s", 98): {"status": "cancelled", "last_error": PAUSE_CANCELS},
        ("s", 40): {"http_status": 404},  # no run at all
        ("s", 97): {"status": "failed", "last_error": "HTTP 500"},
    }
    cancelled, missing = undelivered_fates(undelivered, paused)
    assert cancelled == {("s", 98): 2.0}
    assert missing == [
        {"before_pause_s": 60.0, "run": {"http_status": 404}},
        {"before_pause_s": 3.0, "run": {"status": "failed", "last_error": "HTTP 500"}},
    ]
