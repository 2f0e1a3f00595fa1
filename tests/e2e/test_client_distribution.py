"""The `edgecron-client` distribution as a user installs it: into an empty virtualenv, from the
repository's clients/python, it brings at most a handful of packages (no boto3, no server core), and a
script that imports only what it installed creates, lists and pages against the local stack. With its
`cli` extra, the `edgecron` command works against the stack too; without it, the command says what to
install."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from edgecron_testing.local_stack import ROOT, LocalStackProcess

pytestmark = pytest.mark.e2e

MAX_PACKAGES = 5
INSTALL_TIMEOUT_SEC = 300

SCRIPT = r"""
import json, sys
from importlib import metadata
import edgecron_client
from edgecron_client import EdgeCron

url, admin_key, receiver = sys.argv[1:4]
created = EdgeCron(url, admin_key).apps.create("client-distribution")
client = EdgeCron(url, created["api_key"])
ids = [client.endpoints.create({"url": f"{receiver}/{n}"})["id"] for n in range(5)]
first = client.endpoints.list(limit=2)
pages = [[e["id"] for e in page["data"]] for page in client.endpoints.pages(limit=2)]
every = [e["id"] for e in client.endpoints.iter(limit=2)]
meta = metadata.metadata("edgecron-client")
files = [str(f) for f in metadata.files("edgecron-client") or []]
modules = sorted({name.split(".")[0] for name in sys.modules})
print(json.dumps({
    "created": ids, "first": [e["id"] for e in first["data"]], "first_cursor": first["next_cursor"],
    "pages": pages, "every": every, "client_file": edgecron_client.__file__, "modules": modules,
    "license": meta["License-Expression"], "description": meta.get_payload(), "files": files,
}))
"""


def _source_tree(dest: Path) -> Path:
    """The distribution's sources as a checkout has them (clients/python next to cli/edgecron_client),
    copied so that building leaves nothing behind in the repository."""
    shutil.copytree(ROOT / "clients" / "python", dest / "clients" / "python", symlinks=False)
    for package in ("edgecron_client", "edgecron_cli"):
        shutil.copytree(
            ROOT / "cli" / package, dest / "cli" / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return dest / "clients" / "python"


def _installed(python: Path) -> set[str]:
    listing = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return {package["name"].lower() for package in json.loads(listing.stdout)}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The distribution's wheel, built once from a copy of its sources as pip builds it for a user."""
    where = tmp_path_factory.mktemp("client-wheel")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(where / "dist"),
            str(_source_tree(where / "src")),
        ],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SEC,
        check=False,
        cwd=where,
    )
    assert build.returncode == 0, build.stderr
    (built,) = (where / "dist").glob("edgecron_client-*.whl")
    return built


def _install(tmp_path: Path, requirement: str) -> tuple[Path, set[str]]:
    """A fresh virtualenv with `requirement` installed; its python and the packages it added."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    empty = _installed(python)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-compile", requirement],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SEC,
        check=False,
        cwd=tmp_path,
    )
    assert install.returncode == 0, install.stderr
    return python, _installed(python) - empty


def _run(
    python: Path, args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    bin_dir = python.parent
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(cwd), **(env or {})},
    )


def test_the_client_distribution_installs_few_packages_and_pages_the_api(
    local_stack: LocalStackProcess, wheel: Path, tmp_path: Path
) -> None:
    python, added = _install(tmp_path, str(wheel))
    env_dir = python.parent.parent
    assert "edgecron-client" in added
    assert len(added) <= MAX_PACKAGES, sorted(added)
    assert not added & {"boto3", "botocore", "requests", "pydantic", "pynamodb", "edgecron"}, sorted(added)

    result = _run(
        python,
        [str(python), "-c", SCRIPT, local_stack.api_url, local_stack.admin_key, "http://127.0.0.1:9/hook"],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert Path(seen["client_file"]).is_relative_to(env_dir)  # the installed copy, not the repository's
    assert "requests" not in seen["modules"]
    assert len(seen["first"]) == 2 and seen["first_cursor"]
    assert [len(page) for page in seen["pages"]] == [2, 2, 1]
    assert sorted(seen["every"]) == sorted(seen["created"])
    assert [i for page in seen["pages"] for i in page] == seen["every"]
    assert seen["license"] == "Apache-2.0"
    assert any(f.endswith("licenses/LICENSE") for f in seen["files"])
    assert "pip install ./clients/python" in seen["description"]

    command = _run(python, ["edgecron", "endpoints", "list"], tmp_path)
    assert command.returncode == 2
    assert "pip install 'edgecron-client[cli]'" in command.stderr and "Traceback" not in command.stderr


def test_with_the_cli_extra_the_command_works_against_the_stack(
    local_stack: LocalStackProcess, wheel: Path, tmp_path: Path
) -> None:
    python, added = _install(tmp_path, f"edgecron-client[cli] @ {wheel.as_uri()}")
    assert {"edgecron-client", "typer", "rich", "requests"} <= added
    assert not added & {"boto3", "botocore", "pynamodb", "cryptography", "edgecron"}, sorted(added)
    env = {"EDGECRON_URL": local_stack.api_url, "EDGECRON_API_KEY": local_stack.api_key}

    created = _run(
        python, ["edgecron", "endpoints", "create", "http://127.0.0.1:9/cli", "--json"], tmp_path, env
    )
    assert created.returncode == 0, created.stderr
    endpoint = json.loads(created.stdout)
    shown = _run(python, ["edgecron", "endpoints", "get", endpoint["id"], "--json"], tmp_path, env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["url"] == "http://127.0.0.1:9/cli"
    assert _run(python, ["edgecron", "listen", "--help"], tmp_path).returncode == 0

    local = _run(python, ["edgecron", "local"], tmp_path)
    assert local.returncode == 2
    assert "pip install '.[local]'" in local.stderr and "Traceback" not in local.stderr
