"""A failure to alert or to enqueue does not raise (the state it announces is already stored), but it
is never silent: each one is counted in an EMF metric that an alarm in template.yaml watches."""

from __future__ import annotations

import pytest

from edgecron.config import get_settings
from edgecron.data import notifications
from edgecron.data.queues import DeliveryMessage, send_deliveries
from edgecron_testing.metrics import emitted

MISSING_TOPIC = "arn:aws:sns:us-east-1:123456789012:no-such-topic"
MISSING_QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/no-such-queue"


@pytest.fixture(autouse=True)
def _no_leftover_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    emitted(capsys)


def test_a_failed_alert_is_counted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(get_settings(), "alerts_topic_arn", MISSING_TOPIC)
    assert notifications.publish_alert("schedule paused", {"schedule_id": "sch_1"}) is False
    assert emitted(capsys).get("AlertPublishFailed") == 1.0


def test_a_published_alert_counts_no_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert get_settings().alerts_topic_arn
    assert notifications.publish_alert("schedule paused", {"schedule_id": "sch_1"}) is True
    assert "AlertPublishFailed" not in emitted(capsys)


def test_a_failed_enqueue_counts_every_message_it_lost(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(get_settings(), "delivery_queue_url", MISSING_QUEUE)
    messages = [DeliveryMessage(f"run_{i}", "app_1") for i in range(12)]  # two batches
    assert send_deliveries(messages) == [m.run_id for m in messages]
    assert emitted(capsys).get("EnqueueFailed") == 12.0


def test_a_successful_enqueue_counts_no_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert send_deliveries([DeliveryMessage("run_ok", "app_1")]) == []
    assert "EnqueueFailed" not in emitted(capsys)
