"""A container decrypts each data key of the signing secrets once, however many deliveries of the
batch ask for secrets sealed under it at the same moment."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import botocore.client
import pytest

from edgecron.data import secret_box

THREADS = 8


@pytest.fixture
def kms_decrypts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Records every KMS Decrypt; each one takes a while, as a call over the network does."""
    calls: list[str] = []
    original = botocore.client.BaseClient._make_api_call

    def call(self: Any, operation: str, params: Any) -> Any:
        if operation == "Decrypt":
            calls.append(operation)
            time.sleep(0.05)  # widens the window in which concurrent callers miss the cache
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", call)
    yield calls


def test_concurrent_deliveries_open_a_data_key_once(kms_decrypts: list[str]) -> None:
    sealed = [secret_box.seal(f"whsec_concurrent_{i}") for i in range(THREADS)]  # one data key
    secret_box._open_data_key.cache_clear()  # a new container: nothing opened yet
    start = threading.Barrier(THREADS)

    def unseal(stored: str) -> str:
        start.wait()
        return secret_box.unseal(stored)

    with ThreadPoolExecutor(THREADS) as pool:
        opened = list(pool.map(unseal, sealed))
    assert opened == [f"whsec_concurrent_{i}" for i in range(THREADS)]
    assert len(kms_decrypts) == 1
    assert secret_box.unseal(sealed[0]) == "whsec_concurrent_0" and len(kms_decrypts) == 1  # cached
