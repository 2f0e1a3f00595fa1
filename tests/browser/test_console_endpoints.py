"""The endpoint page in a real headless Chromium against the local stack: an Endpoint's flow-control
limits are shown, edited, cleared and refused when out of range, and "Recover" re-sends what failed
since a time after a confirmation, saying how many runs it re-sent."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from edgecron_testing.api import Api
from tests.browser.conftest import Receiver
from tests.browser.test_console import (
    a_dead_letter,
    api,
    click_in_row,
    css,
    go,
    row_text,
    shot,
    sign_in,
    wait_for,
)
from tests.e2e.conftest import LocalStackProcess

pytestmark = pytest.mark.e2e
__all__ = ["api"]  # the fixture, shared with test_console.py


def edit_form(page: WebDriver, endpoint_id: str) -> WebElement:
    click_in_row(page, endpoint_id, "Edit")
    return css(page, f"form[aria-label='Edit {endpoint_id}']")


def set_limits(page: WebDriver, endpoint_id: str, per_sec: str, in_flight: str) -> None:
    form = edit_form(page, endpoint_id)
    for selector, value in ((".max-per-sec", per_sec), (".max-in-flight", in_flight)):
        box = form.find_element(By.CSS_SELECTOR, selector)
        box.clear()
        box.send_keys(value)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def limits(api: Api, endpoint_id: str) -> tuple[object, object]:
    ep = api.ok("GET", f"/v1/endpoints/{endpoint_id}")
    return ep["max_per_sec"], ep["max_in_flight"]


def test_an_endpoints_limits_are_shown_edited_cleared_and_refused(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url, "max_per_sec": 2})
    sign_in(page, local_stack.api_key)
    go(page, "endpoints")
    wait_for(page, lambda d: "2/s" in row_text(d, endpoint["id"]))
    set_limits(page, endpoint["id"], "5", "3")
    wait_for(page, lambda d: limits(api, endpoint["id"]) == (5, 3))
    wait_for(page, lambda d: "5/s, 3 in flight" in row_text(d, endpoint["id"]))
    shot(page, artifacts, "endpoint-limits")
    set_limits(page, endpoint["id"], "", "3")  # an empty box is unlimited
    wait_for(page, lambda d: limits(api, endpoint["id"]) == (None, 3))
    wait_for(page, lambda d: "unlimited" not in row_text(d, endpoint["id"]))
    set_limits(page, endpoint["id"], "", "0")
    wait_for(page, lambda d: "max_in_flight" in css(d, "#toast").text)
    assert limits(api, endpoint["id"]) == (None, 3)  # refused: nothing stored
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_recover_re_sends_what_failed_since_a_time_and_says_how_many(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, failing_receiver: Receiver, api: Api
) -> None:
    endpoint, run = a_dead_letter(api, failing_receiver, order=8)
    sign_in(page, local_stack.api_key)
    go(page, "endpoints")
    click_in_row(page, endpoint["id"], "Recover")
    assert css(page, "#recover-since").get_attribute("value")  # an hour ago, ready to change
    css(page, "#recover-submit").click()
    assert css(page, "#confirm-text").text.startswith(f"Re-send every run of {endpoint['id']} that failed")
    shot(page, artifacts, "endpoint-recover-confirm")
    css(page, "#confirm-yes").click()
    wait_for(page, lambda d: css(d, "#recover-result").text == f"Recovered 1 run of {endpoint['id']}.")
    shot(page, artifacts, "endpoint-recovered")
    assert api.ok("GET", f"/v1/task-runs/{run['id']}")["series"] == 2
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")
