"""Run a command against a local stack of its own, as the Node tests of the TypeScript SDK need:

    python -m edgecron_testing.with_local_stack -- npm --prefix clients/typescript test

starts `edgecron local` (free ports, a temporary state dir, scans every 2 s), runs the command with
EDGECRON_URL, EDGECRON_API_KEY and EDGECRON_ADMIN_KEY set, stops the stack and exits with the
command's status: 1 instead of 0 when the stack made a call AWS would refuse (IAM) or did not stop
cleanly, with its output on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from edgecron_testing.local_stack import DEFAULT_SCAN_INTERVAL, LocalStackProcess


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1 :] if "--" in argv else argv
    if not command:
        print("usage: python -m edgecron_testing.with_local_stack -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="edgecron-local-") as tmp:
        interval = os.environ.get("EDGECRON_LOCAL_SCAN_INTERVAL", DEFAULT_SCAN_INTERVAL)
        stack = LocalStackProcess(Path(tmp) / "state", interval)
        try:
            stack.start()
        except pytest.fail.Exception as exc:
            print(f"the local stack did not start: {exc}", file=sys.stderr)
            return 1
        try:
            env = {
                **os.environ,
                "EDGECRON_URL": stack.api_url,
                "EDGECRON_API_KEY": stack.api_key,
                "EDGECRON_ADMIN_KEY": stack.admin_key,
            }
            status = subprocess.run(command, env=env, check=False).returncode
        finally:
            stopped = stack.stop()
        denials = stack.denials()
        if denials:
            print("\n".join(["AWS would refuse (IAM):", *denials]), file=sys.stderr)
        if stopped != 0:
            print(f"the local stack exited with {stopped}:\n{stack.output()}", file=sys.stderr)
        if status == 0 and (denials or stopped != 0):
            return 1
        return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
