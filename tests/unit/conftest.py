"""Unit tests of the local emulator that need moto's own process: one per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edgecron_cli.local.moto_process import MotoProcess


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoProcess]:
    """moto's process, started as the local stack starts it, with this process's botocore clients
    sending their calls to it; stopped after the module's tests."""
    process = MotoProcess(0)
    process.start()
    process.serve_botocore()
    yield process
    process.stop()
