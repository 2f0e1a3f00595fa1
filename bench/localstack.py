"""The local stack (`edgecron local`) as a process, for the benchmarks that need real HTTP and real
timing. It reuses the e2e tests' `LocalStackProcess` (free ports, a temporary state dir, a bounded wait
for readiness, a clean SIGINT stop), which reports failures with pytest.fail: turned into RuntimeError."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest


@contextmanager
def local_stack(scan_interval: str, root: Path | None = None) -> Iterator[Any]:
    """A started stack whose scan runs every `scan_interval` seconds; stopped and removed on exit.
    `root` runs the handlers of another checkout (e.g. one with a proposed fix applied)."""
    from edgecron_testing.local_stack import ROOT, LocalStackProcess

    state_dir = Path(tempfile.mkdtemp(prefix="edgecron-bench-"))
    stack = LocalStackProcess(state_dir, scan_interval, (root or ROOT).resolve())
    try:
        try:
            stack.start()
        except pytest.fail.Exception as exc:
            raise RuntimeError(f"the local stack did not start: {exc}") from None
        yield stack
    finally:
        with suppress(AssertionError):  # it never started
            stack.stop()
        shutil.rmtree(state_dir, ignore_errors=True)
