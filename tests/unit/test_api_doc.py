"""docs/api.md is the OpenAPI document rendered: regenerate it when a route changes."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_api_reference_is_up_to_date() -> None:
    render = runpy.run_path(str(ROOT / "scripts" / "gen_api_doc.py"))["render"]
    assert (ROOT / "docs" / "api.md").read_text() == render(), "run: python scripts/gen_api_doc.py"
