"""Where a stalled fan-out goes on, read off its last recorded page."""

from __future__ import annotations

from edgecron.domain.fanout_pages import FanoutPage


def page(**fields: object) -> FanoutPage:
    base: dict[str, object] = {"owner_id": "evt_1", "page": 3, "app_id": "app_1", "created_at": 0}
    return FanoutPage(**(base | fields))  # type: ignore[arg-type]


def test_a_last_page_with_nothing_after_it_ends_the_walk() -> None:
    assert page(more=False, continued=False).resume_point() is None


def test_a_page_whose_next_message_was_not_sent_is_processed_again_from_its_own_cursor() -> None:
    assert page(more=True, continued=False, after="ep_b", last_endpoint_id="ep_k").resume_point() == (
        3,
        "ep_b",
    )


def test_a_continued_page_hands_on_to_the_next_page_from_its_last_endpoint() -> None:
    assert page(more=True, continued=True, after="ep_b", last_endpoint_id="ep_k").resume_point() == (
        4,
        "ep_k",
    )
