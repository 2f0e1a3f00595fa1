"""What `make build` produced (.aws-sam/build), checked as Lambda will run it: the core layer holds only
aarch64 native code, ships no AWS SDK of its own (the functions use the runtime's boto3), contains every
package its own packages require, and stays within a size budget. `make build-test` builds, then runs this.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / ".aws-sam" / "build"
LAYER = BUILD / "CoreLayer" / "python"
RUNTIME_PROVIDED = {"boto3", "botocore", "s3transfer"}
EM_AARCH64 = 183
LAYER_BUDGET_BYTES = 30_000_000  # 30 MB
FUNCTION_BUDGET_BYTES = 256 * 1024
# The extras requested in layers/core/requirements.txt, by distribution.
REQUESTED_EXTRAS = {"aws-lambda-powertools": {"tracer"}}
LAMBDA_ENVIRONMENT = {
    "python_version": "3.12",
    "python_full_version": "3.12.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "aarch64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}

pytestmark = pytest.mark.skipif(not LAYER.is_dir(), reason="run `make build` first (make build-test does)")


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _elf_machine(path: Path) -> int:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", f"{path} is not an ELF file"
    byte_order = "<" if header[5] == 1 else ">"
    machine: int = struct.unpack(f"{byte_order}H", header[18:20])[0]
    return machine


def _section_names(path: Path) -> set[str]:
    """The section names of a 64-bit ELF file (from its section header table)."""
    data = path.read_bytes()
    order = "<" if data[5] == 1 else ">"
    shoff: int = struct.unpack_from(f"{order}Q", data, 0x28)[0]
    entsize, count, names_index = struct.unpack_from(f"{order}HHH", data, 0x3A)
    headers = [data[shoff + i * entsize : shoff + (i + 1) * entsize] for i in range(count)]
    names_offset: int = struct.unpack_from(f"{order}Q", headers[names_index], 0x18)[0]
    found = set()
    for header in headers:
        name: int = struct.unpack_from(f"{order}I", header, 0)[0]
        end = data.index(b"\0", names_offset + name)
        found.add(data[names_offset + name : end].decode())
    return found


def _distributions() -> dict[str, list[str]]:
    """name -> Requires-Dist lines, for each distribution installed in the layer."""
    found: dict[str, list[str]] = {}
    for info in LAYER.glob("*.dist-info"):
        lines = (info / "METADATA").read_text(encoding="utf-8").splitlines()
        name = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("Name:"))
        found[canonicalize_name(name)] = [
            line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")
        ]
    return found


def test_every_native_extension_in_the_layer_is_aarch64() -> None:
    native = [p for p in LAYER.rglob("*") if p.is_file() and (p.suffix == ".so" or ".so." in p.name)]
    assert native, "the layer has no native extensions: is it built?"
    assert {str(p.relative_to(LAYER)): _elf_machine(p) for p in native if _elf_machine(p) != EM_AARCH64} == {}


def test_native_extensions_ship_no_symbol_table() -> None:
    """Stripped (layers/core/Makefile): Lambda loads them through their dynamic symbols alone."""
    native = [p for p in LAYER.rglob("*.so") if p.is_file()]
    assert native
    assert [str(p.relative_to(LAYER)) for p in native if ".symtab" in _section_names(p)] == []
    assert all(".dynsym" in _section_names(p) for p in native)


def test_the_layer_ships_no_aws_sdk_of_its_own() -> None:
    assert not set(_distributions()) & RUNTIME_PROVIDED
    assert not [p.name for p in LAYER.iterdir() if p.name in RUNTIME_PROVIDED]


def test_the_layer_holds_everything_its_packages_require() -> None:
    """requirements.txt is installed with --no-deps, so it must name the whole set itself."""
    installed = _distributions()
    missing = []
    for name, requires in installed.items():
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is not None:
                extras = REQUESTED_EXTRAS.get(name, set()) or {""}
                if not any(
                    requirement.marker.evaluate({**LAMBDA_ENVIRONMENT, "extra": extra}) for extra in extras
                ):
                    continue
            wanted = canonicalize_name(requirement.name)
            if wanted not in installed and wanted not in RUNTIME_PROVIDED:
                missing.append(f"{name} needs {requirement}")
    assert missing == []


def test_the_layer_contains_the_core_package_without_bytecode() -> None:
    assert (LAYER / "edgecron" / "__init__.py").is_file()
    assert not [p for p in LAYER.glob("*/tests") if p.is_dir()]  # the packages' own test suites
    assert (LAYER / "edgecron" / "api" / "resolver.py").is_file()
    assert list((LAYER / "edgecron" / "console" / "assets").iterdir())
    assert not list((LAYER / "edgecron").rglob("__pycache__"))


def test_the_layer_and_each_function_stay_within_their_size_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    functions = {p.name: _size(p) for p in BUILD.iterdir() if p.is_dir() and p.name.endswith("Function")}
    layer = _size(LAYER)
    with capsys.disabled():
        print("\nbuilt sizes (unzipped):", json.dumps({"CoreLayer": layer, **functions}))
    assert functions, "no function was built"
    assert layer <= LAYER_BUDGET_BYTES, layer
    assert {name: size for name, size in functions.items() if size > FUNCTION_BUDGET_BYTES} == {}
