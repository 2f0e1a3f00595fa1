"""The SQS delay of a delivery message: whole seconds rounded down, computed when it is sent."""

from __future__ import annotations

import pytest

from edgecron.data.queues import MAX_DELAY_SEC, DeliveryMessage, _delay


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(-3.0, 0), (0.0, 0), (0.999, 0), (1.0, 1), (59.7, 59), (900.5, MAX_DELAY_SEC), (5_000.0, MAX_DELAY_SEC)],
)
def test_delay_is_whole_seconds_rounded_down_within_the_sqs_limit(seconds: float, expected: int) -> None:
    assert _delay(seconds) == expected


def test_an_absolute_due_time_gives_the_delay_left_at_send_time() -> None:
    message = DeliveryMessage("run_1", "app_1", due_ms=1_000_070_000)
    assert message.delay_at(1_000_000_000) == 70.0
    # the 70th message of a slow dispatch, sent 3.2 s later, still lands on its second
    assert message.delay_at(1_000_003_200) == pytest.approx(66.8)
    assert message.delay_at(1_000_090_000) == 0.0  # already due: no negative delay


def test_a_relative_delay_is_kept_as_given() -> None:
    assert DeliveryMessage("run_1", "app_1", 12.5).delay_at(123) == 12.5
    assert DeliveryMessage("run_1", "app_1").delay_at(123) == 0.0
