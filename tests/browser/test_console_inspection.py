"""Run inspection, the Endpoint page, paging and the pages for unknown ids, in a real headless Chromium
against the local stack: each page state's content is asserted, axe-core finds no violation of any
impact on it, and a screenshot is saved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from edgecron_testing.api import Api
from tests.browser.conftest import AXE, Receiver
from tests.browser.test_console import PAGES, a_dead_letter, api, click, css, go, shot, sign_in, wait_for
from tests.e2e.conftest import LocalStackProcess

pytestmark = pytest.mark.e2e
__all__ = ["api"]  # the fixture, shared with test_console.py

PHONE = (390, 844)
DESKTOP = (1280, 1000)


def violations(driver: WebDriver) -> list[dict[str, Any]]:
    """Every violation axe-core finds on the current page, whatever its impact."""
    if not driver.execute_script("return typeof axe !== 'undefined'"):
        driver.execute_script(AXE.read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => n.target.join(' '))}))))"
        ".catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]));"
    )
    return found


def check(driver: WebDriver, artifacts: Path, name: str) -> None:
    """No accessibility violation on this page state, and its screenshot."""
    assert violations(driver) == [], name
    shot(driver, artifacts, name)


def on_phone(driver: WebDriver, artifacts: Path, name: str) -> None:
    """The page at a phone's width: nothing wider than the screen, no violation, a screenshot."""
    driver.set_window_size(*PHONE)
    try:
        wait_for(driver, lambda d: d.execute_script("return window.innerWidth") <= PHONE[0])
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        wide = driver.execute_script(
            "const w = document.documentElement.clientWidth;"
            "return [...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > w + 1)"
            ".slice(0, 5).map(e => e.tagName + '.' + e.className + '#' + e.id);"
        )
        assert overflow <= 0, f"{name}: the page is {overflow}px wider than the screen: {wide}"
        check(driver, artifacts, name)
    finally:
        driver.set_window_size(*DESKTOP)


def whole_page(driver: WebDriver, artifacts: Path, name: str) -> None:
    """A screenshot of the whole page, however long (the window grows to it, then shrinks back)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(DESKTOP[0], min(int(height) + 140, 4000))
    try:
        shot(driver, artifacts, name)
    finally:
        driver.set_window_size(*DESKTOP)


def text_of(driver: WebDriver, selector: str) -> str:
    element = css(driver, selector)
    return str(element.text)


def wait_text(driver: WebDriver, selector: str, wanted: str, timeout: float = 30) -> str:
    """The text of `selector` once it contains `wanted` (pages redraw as they poll)."""
    found: str = wait_for(
        driver,
        lambda d: next(
            (e.text for e in d.find_elements(By.CSS_SELECTOR, selector) if wanted in e.text), None
        ),
        timeout,
    )
    return found


def test_a_run_page_shows_payload_request_redacted_and_each_attempt(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    endpoint = api.ok(
        "POST",
        "/v1/endpoints",
        {"url": receiver.url, "headers": {"Authorization": "Bearer top-secret-token", "X-Tenant": "acme"}},
    )
    payload = {"order": 42, "items": ["book", "pen"], "customer": {"name": "Ada"}}
    run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint["id"], "payload": payload})
    api.wait_run(run["id"], lambda r: r["status"] == "success")
    sign_in(page, local_stack.api_key)
    go(page, f"runs/{run['id']}")
    shown = wait_text(page, "#run-payload", '"order": 42')
    assert json.loads(shown) == payload and '\n  "order": 42,' in shown  # pretty-printed, two spaces
    request = wait_text(page, "#run-request", "webhook-signature")
    assert f"POST {receiver.url}" in request
    assert "authorization [redacted]" in request.lower() and "v1,[redacted]" in request
    assert "x-tenant acme" in request.lower() and f"webhook-id {run['id']}" in request
    assert "top-secret-token" not in page.page_source
    attempt = wait_text(page, "#attempts .attempt", "HTTP 200")
    assert "Attempt 1" in attempt and " ms" in attempt and "Delivered: no further attempt." in attempt
    assert "This run succeeded: nothing to cancel or replay." in text_of(page, "#run-actions")
    assert any(run["id"] in line for line in receiver.lines)  # the receiver got this very run
    check(page, artifacts, "run-inspection")
    whole_page(page, artifacts, "run-inspection-whole")
    page.find_element(By.CSS_SELECTOR, "button.copy[data-what=payload]").click()
    wait_for(
        page, lambda d: d.find_element(By.CSS_SELECTOR, "button.copy[data-what=payload]").text == "Copied"
    )
    on_phone(page, artifacts, "run-inspection-phone")
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_a_retrying_run_says_why_and_when_and_is_cancelled_from_its_page(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, failing_receiver: Receiver, api: Api
) -> None:
    policy = api.ok("POST", "/v1/retry-policies", {"max_attempts": 3, "base_delay_sec": 600, "jitter": False})
    endpoint = api.ok("POST", "/v1/endpoints", {"url": failing_receiver.url, "retry_policy_id": policy["id"]})
    run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint["id"], "payload": {"n": 1}})
    api.wait_run(run["id"], lambda r: r["status"] == "retry_scheduled")
    sign_in(page, local_stack.api_key)
    go(page, f"runs/{run['id']}")
    attempt = wait_text(page, "#attempts .attempt", "HTTP 503")
    assert "server error (5xx)" in attempt and "Retry scheduled for" in attempt
    check(page, artifacts, "run-retry-scheduled")
    css(page, "#cancel-run").click()
    assert "will not be delivered" in text_of(page, "#confirm-text")
    css(page, "#confirm-yes").click()
    wait_text(page, "main .cards", "cancelled")
    assert "A retry was due, but the run was cancelled." in text_of(page, "#attempts .attempt")
    assert api.ok("GET", f"/v1/task-runs/{run['id']}")["status"] == "cancelled"
    check(page, artifacts, "run-cancelled")
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_a_dead_letter_is_replayed_from_its_run_page(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, failing_receiver: Receiver, api: Api
) -> None:
    endpoint, run = a_dead_letter(api, failing_receiver, order=9)
    sign_in(page, local_stack.api_key)
    go(page, f"runs/{run['id']}")
    attempt = wait_text(page, "#attempts .attempt", "Attempts exhausted")
    assert "HTTP 503" in attempt
    check(page, artifacts, "run-dead-letter")
    css(page, "#replay-run").click()
    css(page, "#confirm-yes").click()
    wait_for(page, lambda d: api.ok("GET", f"/v1/task-runs/{run['id']}")["series"] == 2)
    wait_text(page, "main .cards", "series 2")
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")
    go(page, "runs")
    go(page, f"runs/{run['id']}")
    assert "the run's Endpoint was deleted" in wait_text(page, "main", "Endpoint was deleted")
    assert page.find_elements(By.CSS_SELECTOR, "#run-request") == []
    check(page, artifacts, "run-endpoint-deleted")


@pytest.mark.parametrize(
    ("route", "heading"),
    [
        ("runs/run_01JDQ7Z8S5B0W6X3K2M9P4R7TV", "No run run_01JDQ7Z8S5B0W6X3K2M9P4R7TV"),
        ("endpoints/ep_01JDQ7Z8S5B0W6X3K2M9P4R7TV", "No endpoint ep_01JDQ7Z8S5B0W6X3K2M9P4R7TV"),
        ("schedules/sch_01JDQ7Z8S5B0W6X3K2M9P4R7TV", "No schedule sch_01JDQ7Z8S5B0W6X3K2M9P4R7TV"),
        ("events/evt_01JDQ7Z8S5B0W6X3K2M9P4R7TV", "No event evt_01JDQ7Z8S5B0W6X3K2M9P4R7TV"),
    ],
)
def test_an_unknown_id_has_a_not_found_page(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, route: str, heading: str
) -> None:
    sign_in(page, local_stack.api_key)
    go(page, route)
    assert wait_text(page, "#not-found h1", "No ") == heading
    assert (
        page.find_element(By.CSS_SELECTOR, "#not-found a")
        .get_attribute("href")
        .endswith(f"#/{route.split('/')[0]}")
    )
    check(page, artifacts, f"not-found-{route.split('/')[0]}")


def test_an_endpoint_page_sends_a_signed_test_and_shows_its_result(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url, "description": "test sends"})
    sign_in(page, local_stack.api_key)
    go(page, f"endpoints/{endpoint['id']}")
    assert "healthy" in text_of(page, "#endpoint-health")
    assert "No runs yet" in text_of(page, "#recent-empty") and "No dead letters" in text_of(
        page, "#letters-empty"
    )
    assert receiver.url in wait_text(page, "main dl.facts", receiver.url)
    check(page, artifacts, "endpoint-page-empty")
    css(page, "#send-test").click()
    result = wait_text(page, "#test-result", "HTTP 200")
    assert "success" in result and " ms" in result and "edgecron.test" in result
    run_id = css(page, "#test-result a.id-text").get_attribute("title")
    assert run_id.startswith("run_")
    arrived = [line for line in receiver.lines if run_id in line]
    assert arrived and "-> 200" in arrived[0]  # delivered to the receiver, which answered 200
    assert wait_text(page, "#endpoint-delivered", "1 / 0").endswith("1 / 0")  # the last hour's figures
    assert " ms" in text_of(page, "#endpoint-p50")
    run = api.ok("GET", f"/v1/task-runs/{run_id}")
    assert (run["endpoint_id"], run["payload"]["type"]) == (endpoint["id"], "edgecron.test")
    wait_text(page, "#recent-title + table, section[aria-labelledby=recent-title]", run_id)
    check(page, artifacts, "endpoint-page-test-sent")
    whole_page(page, artifacts, "endpoint-page-whole")
    on_phone(page, artifacts, "endpoint-page-phone")
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_an_endpoint_page_lists_its_dead_letters(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, failing_receiver: Receiver, api: Api
) -> None:
    endpoint, run = a_dead_letter(api, failing_receiver, order=10)
    sign_in(page, local_stack.api_key)
    go(page, f"endpoints/{endpoint['id']}")
    wait_text(page, "section[aria-labelledby=letters-title]", run["id"])
    assert "failing: 1 in a row" in text_of(page, "#endpoint-health")
    check(page, artifacts, "endpoint-page-dead-letters")
    click(page, "section[aria-labelledby=letters-title] p a")
    wait_for(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".dl-select")) == 1)
    assert css(page, "#dl-endpoint").get_attribute("value") == endpoint["id"]
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_paging_reaches_the_two_hundredth_run_and_an_id_search_opens_it(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url})
    created = [
        api.ok(
            "POST", "/v1/task-runs", {"endpoint_id": endpoint["id"], "delay_sec": 3600, "payload": {"n": n}}
        )
        for n in range(205)
    ]
    newest_first = [r["id"] for r in reversed(created)]
    two_hundredth = newest_first[199]
    sign_in(page, local_stack.api_key)
    go(page, f"runs?endpoint_id={endpoint['id']}")
    assert "endpoint_id " + endpoint["id"] in wait_text(page, "#runs-filter", "Filtered by")
    wait_text(page, "#runs-range", "runs 1–50, more are older")
    check(page, artifacts, "runs-filtered-page-1")
    for first in (51, 101, 151):
        click(page, "#runs-older")
        wait_text(page, "#runs-range", f"runs {first}–{first + 49}")
    rows = wait_for(page, lambda d: [r.text for r in d.find_elements(By.CSS_SELECTOR, "main tbody tr")])
    assert len(rows) == 50 and two_hundredth in rows[-1] and newest_first[150] in rows[0]
    check(page, artifacts, "runs-page-4")
    on_phone(page, artifacts, "runs-phone")
    click(page, "#runs-older")
    assert wait_text(page, "#runs-range", "runs 201") == "runs 201–205, the oldest"
    assert css(page, "#runs-older").get_attribute("disabled") is not None
    click(page, "#runs-newer")
    wait_text(page, "#runs-range", "runs 151–200")
    css(page, "#find-run").send_keys(two_hundredth)
    css(page, "form[role=search] button").click()
    assert json.loads(wait_text(page, "#run-payload", '"n"')) == {"n": 5}
    assert "pending" in text_of(page, "main .cards") and css(page, "#cancel-run")
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_a_new_app_sees_what_to_do_next_on_every_empty_list(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path
) -> None:
    made = requests.post(
        f"{local_stack.api_url}/v1/apps",
        json={"name": "empty console"},
        headers={"authorization": f"Bearer {local_stack.admin_key}"},
        timeout=10,
    )
    assert made.status_code == 201, made.text
    sign_in(page, made.json()["api_key"])
    for name, selector, command in (
        ("runs", "#runs-empty", "edgecron runs create"),
        ("endpoints", "#endpoints-empty", "edgecron endpoints create"),
        ("schedules", "#schedules-empty", "edgecron schedules create"),
        ("dead-letters", "#dl-empty", ""),
        ("events", "#events-empty", "edgecron events publish"),
        ("notifications", "main p.muted", "No notifications."),
    ):
        go(page, name)
        assert command in wait_text(page, selector, command)
        check(page, artifacts, f"empty-{name}")


def test_a_schedule_paused_for_failing_shows_why_and_links_its_fires_to_their_runs(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, failing_receiver: Receiver, api: Api
) -> None:
    policy = api.ok("POST", "/v1/retry-policies", {"max_attempts": 1})
    endpoint = api.ok("POST", "/v1/endpoints", {"url": failing_receiver.url, "retry_policy_id": policy["id"]})
    schedule = api.ok(
        "POST",
        "/v1/schedules",
        {"cron": "*/2 * * * * *", "endpoint_ids": [endpoint["id"]], "payload": {"s": 1}},
    )
    wait_for(
        page, lambda d: api.ok("GET", f"/v1/schedules/{schedule['id']}")["status"] == "PAUSED", timeout=60
    )
    paused = api.ok("GET", f"/v1/schedules/{schedule['id']}")
    sign_in(page, local_stack.api_key)
    go(page, f"schedules/{schedule['id']}")
    reason = wait_text(page, "#pause-reason", "Paused")
    assert paused["pause_reason"] and paused["pause_reason"] in reason
    assert f"after {paused['consecutive_failures']} failed fires in a row" in reason
    assert text_of(page, "#schedule-failures").endswith(str(paused["consecutive_failures"]))
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, "main table tbody td a.id-text"))
    check(page, artifacts, "schedule-paused")
    on_phone(page, artifacts, "schedule-paused-phone")

    def first_run(d: WebDriver) -> str:  # the page redraws as it polls: find the link afresh
        link = d.find_element(By.CSS_SELECTOR, "main table tbody td a.id-text")
        title = str(link.get_attribute("title"))
        link.click()
        return title

    run_id = wait_for(page, first_run)
    wait_text(page, "main h1", run_id)
    assert schedule["id"] in wait_text(page, "main .cards", "schedule")
    api.ok("DELETE", f"/v1/schedules/{schedule['id']}")
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_live_updates_show_an_indicator_and_pause_while_the_tab_is_hidden(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url})
    run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint["id"], "delay_sec": 8})
    sign_in(page, local_stack.api_key)
    go(page, f"runs/{run['id']}")
    wait_text(page, "#live", "Live · updated")
    assert "No attempt yet" in text_of(page, "#no-attempts")
    wait_text(page, "#attempts .attempt", "HTTP 200", timeout=30)  # arrives without a reload
    check(page, artifacts, "run-live")
    page.execute_script(
        "Object.defineProperty(document, 'hidden', {value: true, configurable: true});"
        "document.dispatchEvent(new Event('visibilitychange'));"
    )
    wait_text(page, "#live", "Paused while the tab is hidden", timeout=10)
    fetched = page.execute_script("return performance.getEntriesByType('resource').length")
    page.execute_script("return new Promise((done) => setTimeout(done, 7000))")
    assert page.execute_script("return performance.getEntriesByType('resource').length") == fetched
    shot(page, artifacts, "live-paused")
    page.execute_script(
        "Object.defineProperty(document, 'hidden', {value: false, configurable: true});"
        "document.dispatchEvent(new Event('visibilitychange'));"
    )
    wait_text(page, "#live", "Live · updated", timeout=10)
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_every_list_page_fits_a_phones_width(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path
) -> None:
    sign_in(page, local_stack.api_key)
    page.set_window_size(*PHONE)
    try:
        for name in [*PAGES[1:], PAGES[0]]:  # the overview last: signing in drew it at the desktop's width
            go(page, name)
            wait_for(
                page,
                lambda d: d.find_elements(
                    By.CSS_SELECTOR, "main table, main p.muted, main .cards, main .empty"
                ),
            )
            overflow = page.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{name}: the page is {overflow}px wider than the screen"
            check(page, artifacts, f"phone-{name}")
    finally:
        page.set_window_size(*DESKTOP)
