"""The web console in a real headless Chromium against the local stack: sign in, endpoints with the
one-time secret, a schedule's fires in its timeline, replaying a dead letter, publishing an event,
and an accessibility check (axe-core) of every page."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from edgecron_testing.api import Api
from tests.browser.conftest import AXE, Receiver
from tests.e2e.conftest import LocalStackProcess

pytestmark = pytest.mark.e2e

PAGES = ["overview", "endpoints", "schedules", "runs", "dead-letters", "events", "usage", "notifications"]


def wait_for(driver: WebDriver, found: Callable[[WebDriver], Any], timeout: float = 20) -> Any:
    """`found`'s first truthy answer; pages re-render as they poll, so a stale element is retried."""
    wait = WebDriverWait(
        driver, timeout, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException]
    )
    return wait.until(found)


def row_text(driver: WebDriver, text: str) -> str:
    """The text of the first table row that shows `text` ("" while there is none)."""
    rows = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "tbody tr") if text in r.text]
    return rows[0] if rows else ""


def click_in_row(driver: WebDriver, text: str, button: str) -> None:
    """Click `button` in the table row that shows `text` (found afresh: the table may just have been redrawn)."""

    def clicked(d: WebDriver) -> bool:
        rows = [r for r in d.find_elements(By.CSS_SELECTOR, "tbody tr") if text in r.text]
        if not rows:
            return False
        rows[0].find_element(By.XPATH, f".//button[text()='{button}']").click()
        return True

    wait_for(driver, clicked)


def css(driver: WebDriver, selector: str, timeout: float = 20) -> WebElement:
    element: WebElement = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, selector), timeout)
    return element


def click(driver: WebDriver, selector: str) -> None:
    """Click the element `selector` finds, found afresh if the page redrew it in between."""

    def clicked(d: WebDriver) -> bool:
        d.find_element(By.CSS_SELECTOR, selector).click()
        return True

    wait_for(driver, clicked)


def sign_in(driver: WebDriver, key: str) -> None:
    css(driver, "#api-key").send_keys(key)
    css(driver, "#sign-in").click()
    css(driver, "#nav a[aria-current=page]")


def go(driver: WebDriver, route: str) -> None:
    driver.execute_script("window.location.hash = arguments[0]", f"#/{route}")
    wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, "main h1"))


def shot(driver: WebDriver, artifacts: Path, name: str) -> None:
    driver.save_screenshot(str(artifacts / f"{name}.png"))


def axe_violations(driver: WebDriver) -> list[dict[str, Any]]:
    """Serious and critical violations axe-core finds on the current page (axe runs in the page)."""
    driver.execute_script(AXE.read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => n.target.join(' '))}))))"
        ".catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]));"
    )
    return [v for v in found if v["impact"] in {"serious", "critical"}]


@pytest.fixture
def api(local_stack: LocalStackProcess) -> Api:
    return Api(local_stack.api_url, local_stack.api_key)


def test_the_console_is_served_with_a_strict_content_security_policy(local_stack: LocalStackProcess) -> None:
    response = requests.get(f"{local_stack.api_url}/console", timeout=10)
    assert response.status_code == 200 and "text/html" in response.headers["content-type"]
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe-inline" not in policy
    assert "<script>" not in response.text and " style=" not in response.text
    assert requests.get(f"{local_stack.api_url}/console/..%2Ftemplate.yaml", timeout=10).status_code == 404


def test_sign_in_and_every_page_has_no_serious_accessibility_violation(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path
) -> None:
    assert axe_violations(page) == []  # the sign-in form
    shot(page, artifacts, "sign-in")
    sign_in(page, local_stack.api_key)
    assert page.execute_script("return sessionStorage.getItem('edgecron.key')") == local_stack.api_key
    assert local_stack.api_key not in page.current_url
    for name in PAGES:
        go(page, name)
        wait_for(
            page,
            lambda d: d.find_elements(By.CSS_SELECTOR, "main table, main p.muted, main .cards, main .empty"),
        )
        assert axe_violations(page) == [], name
        shot(page, artifacts, f"page-{name}")


def test_a_refused_key_keeps_the_sign_in_form(page: WebDriver) -> None:
    css(page, "#api-key").send_keys("ek_not_a_key")
    css(page, "#sign-in").click()
    alert = wait_for(page, lambda d: d.find_element(By.CSS_SELECTOR, "[role=alert]").text)
    assert alert.startswith("That key was refused")
    assert page.execute_script("return sessionStorage.getItem('edgecron.key')") is None


def test_the_admin_key_opens_the_apps_page(page: WebDriver, local_stack: LocalStackProcess) -> None:
    sign_in(page, local_stack.admin_key)
    assert [a.text for a in page.find_elements(By.CSS_SELECTOR, "#nav a")] == ["Apps"]
    assert axe_violations(page) == []


def test_creating_an_endpoint_shows_its_secret_once(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    sign_in(page, local_stack.api_key)
    go(page, "endpoints")
    css(page, "#new-url").send_keys(receiver.url)
    css(page, "#new-description").send_keys('<img src=x onerror="window.hacked=1"> billing')
    css(page, "#create-endpoint").click()
    secret = css(page, "#secret-value").text
    assert secret.startswith("whsec_")
    shot(page, artifacts, "endpoint-secret")
    cell = wait_for(
        page, lambda d: [c for c in d.find_elements(By.CSS_SELECTOR, "td") if "billing" in c.text]
    )
    assert cell[0].text.startswith("<img")  # shown as text, never as markup
    assert page.execute_script("return window.hacked") is None
    go(page, "runs")
    go(page, "endpoints")
    css(page, "main table")
    assert page.find_elements(By.CSS_SELECTOR, "#secret-value") == []
    assert secret not in page.page_source
    endpoint_id = next(e["id"] for e in api.all_pages("/v1/endpoints") if e["url"] == receiver.url)
    api.ok("DELETE", f"/v1/endpoints/{endpoint_id}")


def test_an_every_ten_seconds_schedule_fills_its_timeline_and_pauses(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url})
    sign_in(page, local_stack.api_key)
    go(page, "schedules")
    css(page, "#new-schedule-name").send_keys("every ten seconds")
    css(page, "#new-schedule-cron").send_keys("*/10 * * * * *")
    zone = css(page, "#new-schedule-zone")
    zone.clear()
    zone.send_keys("Europe/Paris")
    css(page, "#new-schedule-endpoints").send_keys(endpoint["id"])
    css(page, "#create-schedule").click()
    wait_for(page, lambda d: "#/schedules/sch_" in d.current_url)
    preview = wait_for(
        page,
        lambda d: [t for t in d.find_elements(By.CSS_SELECTOR, "main table") if "Next fire times" in t.text],
    )
    cells = preview[0].find_elements(By.CSS_SELECTOR, "tbody tr:first-child td")
    assert cells[0].text.endswith("Europe/Paris") and cells[1].text.endswith("UTC")  # in both zones
    css(page, "#fire-timeline li.fire-COMPLETED", timeout=60)
    shot(page, artifacts, "schedule-timeline")
    css(page, "#pause").click()
    css(page, "#resume")
    schedule_id = page.current_url.rsplit("/", 1)[1]
    assert api.ok("GET", f"/v1/schedules/{schedule_id}")["status"] == "PAUSED"
    api.ok("DELETE", f"/v1/schedules/{schedule_id}")
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def a_dead_letter(api: Api, failing_receiver: Receiver, order: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """An Endpoint with one attempt per run and a run of it that is now a dead letter."""
    policy = api.ok("POST", "/v1/retry-policies", {"max_attempts": 1})
    endpoint = api.ok("POST", "/v1/endpoints", {"url": failing_receiver.url, "retry_policy_id": policy["id"]})
    run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint["id"], "payload": {"order": order}})
    api.wait_run(run["id"], lambda r: r["status"] == "dead_letter")
    return endpoint, run


def select_dead_letter(page: WebDriver, endpoint_id: str, run_id: str) -> None:
    """On the dead-letters page, filter by the Endpoint and tick its one dead letter."""
    go(page, "dead-letters")
    css(page, "#dl-endpoint").send_keys(endpoint_id)
    css(page, "form[aria-label='Filter dead letters'] button").click()
    wait_for(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".dl-select")) == 1)
    click(page, f"input[aria-label='Select {run_id}']")


def test_a_failed_run_is_replayed_from_dead_letters(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, failing_receiver: Receiver, api: Api
) -> None:
    endpoint, run = a_dead_letter(api, failing_receiver, order=7)
    sign_in(page, local_stack.api_key)
    select_dead_letter(page, endpoint["id"], run["id"])
    css(page, "#replay-selected").click()
    dialog_text = css(page, "#confirm-text").text
    assert dialog_text.startswith("Replay 1 dead letter?")
    shot(page, artifacts, "dead-letter-confirm")
    css(page, "#confirm-yes").click()
    assert css(page, "#replay-done").text == "Replayed 1 of 1."
    shot(page, artifacts, "dead-letter-replayed")
    assert api.ok("GET", f"/v1/task-runs/{run['id']}")["series"] == 2
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_publishing_an_event_shows_its_runs(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url, "filter_events": ["invoice.*"]})
    sign_in(page, local_stack.api_key)
    go(page, "events")
    css(page, "#event-name").send_keys("invoice.paid")
    editor = css(page, "#event-payload")
    editor.clear()
    editor.send_keys('{"amount": ')
    assert css(page, "#payload-state").text.startswith("Not JSON")
    editor.send_keys("4200}")
    assert css(page, "#payload-state").text == "Valid JSON"
    css(page, "#publish").click()
    wait_for(page, lambda d: "#/events/evt" in d.current_url)
    row = wait_for(
        page,
        lambda d: [r for r in d.find_elements(By.CSS_SELECTOR, "main table tbody tr") if "success" in r.text],
        timeout=30,
    )
    assert endpoint["id"] in row[0].text
    shot(page, artifacts, "event-runs")
    assert json.loads(css(page, "main pre").text) == {"amount": 4200}
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_an_endpoint_is_edited_rotated_and_disabled(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, receiver: Receiver, api: Api
) -> None:
    endpoint = api.ok("POST", "/v1/endpoints", {"url": receiver.url, "description": "before"})
    sign_in(page, local_stack.api_key)
    go(page, "endpoints")
    click_in_row(page, endpoint["id"], "Edit")
    form = css(page, f"form[aria-label='Edit {endpoint['id']}']")
    description = form.find_elements(By.CSS_SELECTOR, "input")[1]
    description.clear()
    description.send_keys("after")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(page, lambda d: api.ok("GET", f"/v1/endpoints/{endpoint['id']}")["description"] == "after")
    click_in_row(page, "after", "Rotate secret")
    assert "keeps signing for 24 hours" in css(page, "#confirm-text").text
    css(page, "#confirm-yes").click()
    rotated = css(page, "#secret-value").text
    assert rotated.startswith("whsec_") and rotated != endpoint["secret"]
    shot(page, artifacts, "endpoint-rotated")
    click_in_row(page, endpoint["id"], "Disable")
    wait_for(page, lambda d: api.ok("GET", f"/v1/endpoints/{endpoint['id']}")["active"] is False)
    click_in_row(page, endpoint["id"], "Enable")
    wait_for(page, lambda d: api.ok("GET", f"/v1/endpoints/{endpoint['id']}")["active"] is True)
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_an_endpoint_disabled_for_failing_shows_its_streak_and_is_re_enabled(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, failing_receiver: Receiver, api: Api
) -> None:
    policy = api.ok("POST", "/v1/retry-policies", {"max_attempts": 1})
    endpoint = api.ok(
        "POST",
        "/v1/endpoints",
        {
            "url": failing_receiver.url,
            "retry_policy_id": policy["id"],
            "disable_after_failures": 1,
            "disable_after_sec": 0,
        },
    )
    run = api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint["id"]})
    api.wait_run(run["id"], lambda r: r["status"] == "dead_letter")
    wait_for(page, lambda d: api.ok("GET", f"/v1/endpoints/{endpoint['id']}")["disabled_reason"] == "failing")
    sign_in(page, local_stack.api_key)
    go(page, "endpoints")
    wait_for(page, lambda d: "disabled for failing: 1 in a row" in row_text(d, endpoint["id"]))
    shot(page, artifacts, "endpoint-disabled-for-failing")
    click_in_row(page, endpoint["id"], "Enable")
    wait_for(page, lambda d: api.ok("GET", f"/v1/endpoints/{endpoint['id']}")["health"]["state"] == "healthy")
    wait_for(page, lambda d: "healthy" in row_text(d, endpoint["id"]))
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def test_bulk_replay_says_how_many_and_a_run_shows_its_attempts(
    page: WebDriver, local_stack: LocalStackProcess, artifacts: Path, failing_receiver: Receiver, api: Api
) -> None:
    policy = api.ok("POST", "/v1/retry-policies", {"max_attempts": 1})
    endpoint = api.ok("POST", "/v1/endpoints", {"url": failing_receiver.url, "retry_policy_id": policy["id"]})
    runs = [api.ok("POST", "/v1/task-runs", {"endpoint_id": endpoint["id"]}) for _ in range(2)]
    for run in runs:
        api.wait_run(run["id"], lambda r: r["status"] == "dead_letter")
    sign_in(page, local_stack.api_key)
    go(page, "dead-letters")
    css(page, "#dl-endpoint").send_keys(endpoint["id"])
    css(page, "form[aria-label='Filter dead letters'] button").click()
    wait_for(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".dl-select")) == 2)
    css(page, "#replay-all").click()
    assert css(page, "#confirm-text").text == "Replay 2 dead letters matching this filter?"
    css(page, "#confirm-yes").click()
    assert css(page, "#replay-done").text == "Replayed 2."
    for run in runs:
        assert api.ok("GET", f"/v1/task-runs/{run['id']}")["series"] == 2
    go(page, f"runs/{runs[0]['id']}")
    attempts = wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#attempts .attempt"))
    assert "HTTP 503" in attempts[0].text and " ms" in attempts[0].text
    shot(page, artifacts, "run-attempts")
    go(page, "overview")
    wait_for(page, lambda d: css(d, "#card-deliveries .value").text not in {"", "0"})
    shot(page, artifacts, "overview")
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")


def _dead_letter_requests(driver: WebDriver) -> int:
    """How many dead-letter list requests the page has completed so far."""
    count: int = driver.execute_script(
        "return performance.getEntriesByType('resource').filter((e) => e.name.includes('/v1/dead-letters?')).length"
    )
    return count


def test_a_poll_that_finds_nothing_new_leaves_the_selected_dead_letter_alone(
    page: WebDriver, local_stack: LocalStackProcess, failing_receiver: Receiver, api: Api
) -> None:
    endpoint, run = a_dead_letter(api, failing_receiver, order=8)
    sign_in(page, local_stack.api_key)
    select_dead_letter(page, endpoint["id"], run["id"])
    box = css(page, f"input[aria-label='Select {run['id']}']")
    box_id = box.id
    seen = _dead_letter_requests(page)
    # two more polls answered: the first one's drawing (if any) is surely done by the second
    wait_for(page, lambda d: _dead_letter_requests(d) >= seen + 2, timeout=30)
    assert css(page, f"input[aria-label='Select {run['id']}']").id == box_id  # the same element, not redrawn
    assert box.is_selected()
    assert css(page, "#replay-selected").text == "Replay selected (1)"
    api.ok("DELETE", f"/v1/endpoints/{endpoint['id']}")
