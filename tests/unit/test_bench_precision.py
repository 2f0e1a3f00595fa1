"""The precision benchmark's delivered rate: requests of known fires inside the window, per second."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.precision import delivered_rate


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
