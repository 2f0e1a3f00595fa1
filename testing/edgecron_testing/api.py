"""A tiny requests wrapper for e2e tests: the local stack's API with its default App's key."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests


class Api:
    def __init__(self, base_url: str, key: str) -> None:
        self.base_url = base_url
        self.session = requests.Session()
        self.session.headers["authorization"] = f"Bearer {key}"

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> requests.Response:
        return self.session.request(
            method, self.base_url + path, json=body, params=params or None, timeout=30
        )

    def ok(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        resp = self.call(method, path, body, **params)
        assert resp.status_code < 300, (method, path, resp.status_code, resp.text)
        return resp.json() if resp.content else None

    def all_pages(self, path: str, limit: int = 50, **params: Any) -> list[Any]:
        """Every item of a list route, following next_cursor to the end."""
        items: list[Any] = []
        cursor = None
        while True:
            page = self.ok("GET", path, limit=limit, **({"cursor": cursor} if cursor else {}), **params)
            items.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def wait_run(
        self, run_id: str, done: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        run: dict[str, Any] = {}
        while time.monotonic() < deadline:
            run = self.ok("GET", f"/v1/task-runs/{run_id}")
            if done(run):
                return run
            time.sleep(0.2)
        raise AssertionError(f"run {run_id} did not reach the expected state: {run}")


def terminal(run: dict[str, Any]) -> bool:
    return run["status"] in {"success", "failed", "dead_letter", "cancelled"}
