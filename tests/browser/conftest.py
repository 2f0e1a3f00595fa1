"""Browser tests: the console in Debian's headless Chromium (selenium), against the local stack.

The stack is the e2e layer's (`tests/e2e/conftest.py`, started as a process on free ports). Each test
gets a fresh browser tab without session storage; screenshots go to the artifacts directory
(EDGECRON_ARTIFACTS, default `artifacts/` at the repository root) under `browser/`.
Run `scripts/install-browser.sh` first (`make browser` does).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

from edgecron_cli.commands.listen import Listener, Script, make_server
from tests.e2e.conftest import (  # the same stack fixture and IAM checks as the e2e layer
    ROOT,
    LocalStackProcess,
    _no_access_denied,
    local_stack,
    pytest_sessionfinish,
)

__all__ = ["LocalStackProcess", "_no_access_denied", "local_stack", "pytest_sessionfinish"]

ARTIFACTS = Path(os.environ.get("EDGECRON_ARTIFACTS") or ROOT / "artifacts") / "browser"
AXE = Path(__file__).parent / "vendor" / "axe-core-4.14.1.min.js"


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(f"none of {names} is installed: run scripts/install-browser.sh", pytrace=False)


@pytest.fixture(scope="session")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = _binary("chromium", "chromium-browser")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=_binary("chromedriver")))
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture
def page(browser: WebDriver, local_stack: LocalStackProcess) -> Iterator[WebDriver]:
    """The browser on a blank console origin: signed out, nothing in session storage."""
    browser.get(f"{local_stack.api_url}/console")
    browser.execute_script("window.sessionStorage.clear()")
    browser.get(f"{local_stack.api_url}/console")
    yield browser


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@dataclass
class Receiver:
    """An `edgecron listen` server on 127.0.0.1, answering as scripted."""

    url: str
    lines: list[str]


def _receiver(script: Script) -> Iterator[Receiver]:
    lines: list[str] = []
    server = make_server(Listener([], script, echo=lines.append), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Receiver(f"http://127.0.0.1:{server.server_address[1]}/hook", lines)
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def receiver() -> Iterator[Receiver]:
    yield from _receiver(Script(status=200))


@pytest.fixture(scope="session")
def failing_receiver() -> Iterator[Receiver]:
    yield from _receiver(Script(status=503))
