"""API fuzzing: schemathesis against the served /openapi.json of the local stack. Zero server errors,
and every response conforms to the documented status codes, content types and schemas; the stateful
phase follows the document's links from each create to the operations on what it made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import requests

from edgecron_testing.local_stack import LocalStackProcess

MAX_EXAMPLES = os.environ.get("EDGECRON_FUZZ_EXAMPLES", "10")
# positive_data_acceptance: some valid-by-schema values are refused on purpose (a cron that never
# fires, an unknown time zone, a URL the SSRF guard refuses).
EXCLUDED = "positive_data_acceptance"


def test_schemathesis_finds_no_failure(local_stack: LocalStackProcess, tmp_path: Path) -> None:
    admin = {"authorization": f"Bearer {local_stack.admin_key}"}
    app = requests.post(
        f"{local_stack.api_url}/v1/apps", json={"name": "fuzz"}, headers=admin, timeout=30
    ).json()
    schemathesis = Path(sys.executable).with_name("schemathesis")
    result = subprocess.run(
        [
            str(schemathesis),
            "run",
            f"{local_stack.api_url}/openapi.json",
            "--header",
            f"Authorization: Bearer {app['api_key']}",
            "--checks",
            "all",
            "--exclude-checks",
            EXCLUDED,
            "--max-examples",
            MAX_EXAMPLES,
            "--workers",
            "2",
            "--generation-deterministic",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--request-timeout",
            "30",
            "--report-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    summary = result.stdout[result.stdout.find("SUMMARY") :]
    print(summary)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
