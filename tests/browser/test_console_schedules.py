"""The schedule pages of the console in headless Chromium against the local stack: jitter and
overlap policy in the create form and on the detail, and the "Trigger now" button, whose manual
fire shows in the timeline with its due time."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from edgecron_testing.api import Api
from tests.browser.conftest import Receiver
from tests.browser.test_console import axe_violations, css, go, row_text, shot, sign_in, wait_for
from tests.e2e.conftest import LocalStackProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def api(local_stack: LocalStackProcess) -> Api:
    return Api(local_stack.api_url, local_stack.api_key)


def test_a_schedule_is_made_with_jitter_and_an_overlap_policy_and_triggered_now(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url})
    sign_in(page, local_stack.api_key)
    go(page, "schedules")
    css(page, "#new-schedule-name").send_keys("yearly, triggered by hand")
    css(page, "#new-schedule-cron").send_keys("0 0 1 1 *")
    css(page, "#new-schedule-endpoints").send_keys(endpoint["id"])
    jitter = css(page, "#new-schedule-jitter")
    jitter.clear()
    jitter.send_keys("90")
    Select(css(page, "#new-schedule-overlap")).select_by_value("BUFFER_ONE")
    css(page, "#create-schedule").click()
    wait_for(page, lambda d: "#/schedules/sch_" in d.current_url)
    schedule_id = page.current_url.rsplit("/", 1)[1]
    stored = api.ok("GET", f"/v1/schedules/{schedule_id}")
    assert stored["jitter_sec"] == 90 and stored["overlap_policy"] == "BUFFER_ONE"
    assert css(page, "#schedule-jitter").text.endswith("90 s")
    assert css(page, "#schedule-overlap").text.endswith("BUFFER_ONE")
    assert "No fires yet." in css(page, "main").text
    css(page, "#trigger").click()
    css(page, "#fire-timeline li", timeout=30)
    wait_for(page, lambda d: "(manual)" in row_text(d, "(manual)"))
    [fire] = api.ok("GET", f"/v1/schedules/{schedule_id}/fires")["data"]
    assert fire["manual"] is True and fire["due_at"] == fire["fire_time"]  # a trigger is not jittered
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#fire-timeline li.fire-COMPLETED"))
    legend = [li.text for li in page.find_elements(By.CSS_SELECTOR, "ul.legend li")]
    assert "SKIPPED" in legend and "BUFFERED" in legend
    shot(page, artifacts, "schedule-triggered")
    assert axe_violations(page) == []
    api.ok("DELETE", f"/v1/schedules/{schedule_id}")
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_a_bad_jitter_is_refused_with_its_field(page: WebDriver, local_stack: LocalStackProcess) -> None:
    sign_in(page, local_stack.api_key)
    go(page, "schedules")
    css(page, "#new-schedule-cron").send_keys("0 0 1 1 *")
    jitter = css(page, "#new-schedule-jitter")
    jitter.clear()
    jitter.send_keys("4000")
    page.execute_script("document.querySelector('#new-schedule-jitter').removeAttribute('max')")
    css(page, "#create-schedule").click()
    toast = wait_for(page, lambda d: [p for p in d.find_elements(By.CSS_SELECTOR, "#toast p") if p.text])
    assert toast[0].text.startswith("jitter_sec:")
    assert "#/schedules/sch_" not in page.current_url
