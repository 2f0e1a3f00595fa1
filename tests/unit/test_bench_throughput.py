"""The throughput benchmark's CPU figure: the stack's process and its child (moto's), read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.throughput import process_cpu_s

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def test_a_process_without_children_reports_its_own_cpu_only() -> None:
    sum(range(2_000_000))  # some CPU of our own to read
    used = process_cpu_s(os.getpid())
    assert set(used) <= {"stack", "moto", "consumers", "other"}
    assert used["stack"] > 0


@pytest.mark.parametrize(
    ("argument", "label"),
    [
        ("edgecron_cli.local.moto_process", "moto"),
        ("edgecron_cli.local.consumers_process", "consumers"),
        ("x", "other"),
    ],
)
def test_a_child_process_is_reported_by_its_module(argument: str, label: str) -> None:
    before = process_cpu_s(os.getpid())  # other children of this process (a moto fixture's) count too
    busy = "import sys; sum(range(3_000_000)); print('ready', flush=True); sys.stdin.read()"
    child = subprocess.Popen(
        [sys.executable, "-c", busy, argument], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        used = process_cpu_s(os.getpid())
        own = _cpu_s(child.pid)
        assert own > 0
        assert used[label] - before.get(label, 0.0) >= own  # the child's own CPU, under its label
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)


def test_a_process_that_is_gone_reports_nothing() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(10)
    assert process_cpu_s(child.pid) == {}


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
