"""What `pip install edgecron` brings and what only `pip install 'edgecron[local]'` adds.

The core and the client library must not need moto, PyYAML or anything else only the emulator uses;
the emulator's moto is pinned to the one release its work-arounds were written for.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from edgecron_cli.local import moto_patches

ROOT = Path(__file__).resolve().parents[2]
EMULATOR_ONLY = {"moto", "pyyaml", "aws-sam-translator", "werkzeug", "flask"}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return match.group(0).lower().replace("_", "-")


def _project() -> dict[str, object]:
    document = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project: dict[str, object] = document["project"]
    return project


def test_the_core_install_needs_nothing_only_the_emulator_uses() -> None:
    core = {_name(r) for r in _project()["dependencies"]}  # type: ignore[attr-defined]
    assert not core & EMULATOR_ONLY, core & EMULATOR_ONLY
    assert {"requests", "pydantic", "typer"} <= core  # the client library and the `edgecron` command


def test_moto_is_only_in_the_local_extra_pinned_to_the_patched_release() -> None:
    extras: dict[str, list[str]] = _project()["optional-dependencies"]  # type: ignore[assignment]
    local = {_name(r): r for r in extras["local"]}
    assert re.fullmatch(
        r"moto(\[server\])?==" + re.escape(moto_patches.MOTO_VERSION), local["moto"].replace(" ", "")
    )
    assert {"pyyaml", "aws-sam-translator"} <= set(local)
    for extra, requirements in extras.items():
        if extra != "local":
            assert "moto" not in {_name(r) for r in requirements}, extra


def test_the_installed_metadata_says_the_same() -> None:
    """Requires-Dist of the installed package: moto only under `extra == "local"`."""
    requires = metadata.requires("edgecron") or []
    moto = [r for r in requires if _name(r) == "moto"]
    assert moto, requires
    assert all('extra == "local"' in r for r in moto), moto
    assert all('extra == "local"' in r for r in requires if _name(r) in EMULATOR_ONLY), requires


def test_the_dev_install_and_the_layer_agree_with_the_pins() -> None:
    dev = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8")
    assert re.search(r"^moto\[server\]==" + re.escape(moto_patches.MOTO_VERSION) + r"\b", dev, re.M)
    layer = (ROOT / "layers" / "core" / "requirements.txt").read_text(encoding="utf-8")
    layer_names = {_name(line) for line in layer.splitlines() if line.strip() and not line.startswith("#")}
    assert not layer_names & (EMULATOR_ONLY | {"typer", "rich"}), layer_names


def test_the_wheel_ships_neither_tests_nor_test_support() -> None:
    document = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = document["tool"]["setuptools"]
    assert set(setuptools["package-dir"]) == {"edgecron", "edgecron_cli", "edgecron_client"}
    assert setuptools["packages"]["find"]["where"] == ["layers/core", "cli"]


_BLOCK_EMULATOR = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'moto', 'yaml', 'samtranslator', 'werkzeug', 'flask'}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
"""


def _without_emulator(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCK_EMULATOR + code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )


def test_the_core_the_client_and_the_cli_import_without_the_emulator() -> None:
    result = _without_emulator(
        "import edgecron.api.resolver, edgecron.data.models, edgecron_client, edgecron_cli.main\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in {'moto', 'yaml'}]\n"
        "print('ok')"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_edgecron_local_without_the_extra_says_what_to_install() -> None:
    result = _without_emulator("sys.argv = ['edgecron', 'local']\nfrom edgecron_cli.main import app\napp()")
    assert result.returncode == 2, result.stderr
    assert "pip install 'edgecron[local]'" in result.stderr
    assert "Traceback" not in result.stderr
