"""`edgecron mcp` before it serves: it needs an App key, and without the `mcp` package it says what to
install instead of a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_BLOCK_MCP = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'mcp':
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
sys.argv = ['edgecron', 'mcp']
from edgecron_cli.main import app
app()
"""


def _edgecron_mcp(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("EDGECRON_")}
    return subprocess.run(
        [sys.executable, "-c", _BLOCK_MCP],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={**clean, **env},
    )


def test_without_the_mcp_package_it_says_what_to_install(tmp_path: Path) -> None:
    result = _edgecron_mcp(tmp_path, {"EDGECRON_URL": "http://127.0.0.1:9", "EDGECRON_API_KEY": "ek_x"})
    assert result.returncode == 2, result.stderr
    assert "pip install 'edgecron[mcp]'" in result.stderr and "Traceback" not in result.stderr


def test_without_an_app_key_it_does_not_start(tmp_path: Path) -> None:
    result = _edgecron_mcp(tmp_path, {"EDGECRON_URL": "http://127.0.0.1:9", "EDGECRON_ADMIN_KEY": "adm_x"})
    assert result.returncode == 2, result.stderr
    assert "key" in result.stderr.lower() and "Traceback" not in result.stderr
