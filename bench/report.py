"""Rows of the printed table and the results.json document."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results.json"


@dataclass(frozen=True)
class Row:
    """One line of the table: a figure, the target it is held against, and the verdict."""

    bench: str
    case: str
    figure: str
    target: str = ""
    verdict: str = ""


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("meets" if ok else "MISSES")


def table(rows: list[Row]) -> str:
    headers = ("benchmark", "case", "figure", "target", "verdict")
    cells = [headers, *[(r.bench, r.case, r.figure, r.target, r.verdict) for r in rows]]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    lines = []
    for n, cell in enumerate(cells):
        lines.append("  ".join(text.ljust(widths[i]) for i, text in enumerate(cell)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """Where the figures were taken: they depend on the machine (moto runs in the same process)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "git_commit": commit,
    }


def write(document: dict[str, Any], rows: list[Row], path: Path = RESULTS) -> Path:
    document = {**document, "table": [asdict(r) for r in rows]}
    path.write_text(json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")
    return path
