"""The local stack (`edgecron local`) as a real process, shared by the e2e tests of a session.

`local_stack` starts it on free ports with a temporary state dir and waits until it is ready. Its
output (stdout and stderr of every run, restarts included) is kept: `LocalStackProcess.output()`.

Environment:
- EDGECRON_LOCAL_SCAN_INTERVAL: seconds between scans (default 2; the stack's default is every minute).
  A test module can also parametrize `local_stack` indirectly with the interval.
- EDGECRON_LOCAL_ROOT: run the stack from another checkout (e.g. stand-in handlers) instead of this one.

Every stack checks each function's AWS calls against its role in template.yaml and records the calls
it refuses in its state dir: a test during which a stack recorded one fails, even if the code
swallowed the error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgecron_testing.local_stack import DEFAULT_SCAN_INTERVAL, ROOT, LocalStackProcess
from edgecron_testing.receiver import Receiver


def _all_denials() -> dict[Path, int]:
    return {stack.state_dir: len(stack.denials()) for stack in LocalStackProcess.started}


@pytest.fixture(autouse=True)
def _no_access_denied() -> Iterator[None]:
    """A call AWS would refuse (IAM, template.yaml) fails the test during which a stack made it."""
    before = _all_denials()
    yield
    new = [
        line
        for stack in LocalStackProcess.started
        for line in stack.denials()[before.get(stack.state_dir, 0) :]
    ]
    if new:
        pytest.fail("AWS would refuse these calls (IAM, template.yaml):\n" + "\n".join(new), pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Any refused call of any stack fails the session, whenever it happened."""
    refused = [line for stack in LocalStackProcess.started for line in stack.denials()]
    if refused:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line("AWS would refuse these calls (IAM, template.yaml):", red=True)
            for line in refused:
                reporter.write_line(f"  {line}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def local_stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalStackProcess]:
    interval = getattr(request, "param", None) or os.environ.get(
        "EDGECRON_LOCAL_SCAN_INTERVAL", DEFAULT_SCAN_INTERVAL
    )
    root = Path(os.environ.get("EDGECRON_LOCAL_ROOT") or ROOT).resolve()
    stack = LocalStackProcess(tmp_path_factory.mktemp("edgecron-local"), str(interval), root)
    stack.start()
    yield stack
    status = stack.stop()
    assert status == 0, f"the local stack exited with {status}:\n{stack.output()}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A real HTTP receiver on 127.0.0.1 that answers as scripted and records what arrived."""
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def throwaway_stack(tmp_path: Path) -> Iterator[LocalStackProcess]:
    """A stack of the test's own, whose processes the test may kill; stopped whatever the test did."""
    stack = LocalStackProcess(tmp_path / "state", "60")
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
