"""Code, docs and tests describe EdgeCron's behaviour, never the process that produced them: no
ticket numbers, no references to planning documents or their sections."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = {
    "ticket number": re.compile(r"\bissue\s*#?\d+", re.I),
    "planning document": re.compile(r"\bbrief(?:'s)?\b(?!ly)", re.I),
    "source document": re.compile(r"\bseed\s*#?0\d\d\b", re.I),
    "section sign": re.compile("\u00a7"),
}
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".js", ".html", ".css", ".sh", ".json", ".txt", ""}
SKIP_PARTS = {"vendor"}


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    files = []
    for name in out.splitlines():
        path = ROOT / name
        if path.suffix in SUFFIXES and not SKIP_PARTS & set(path.parts) and path.is_file():
            files.append(path)
    return files


def test_no_file_cites_the_work_process() -> None:
    this = Path(__file__).resolve()
    found = []
    for path in tracked_files():
        if path == this:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for what, pattern in PATTERNS.items():
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {what}: {line.strip()[:100]}")
    assert not found, "\n".join(found)
