"""Test support is one package (edgecron_testing) that the tests and the benchmarks both import: the
benchmarks never import the tests, and the wheel never ships either."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPORTS_TESTS = re.compile(r"^\s*(import\s+tests\b|from\s+tests(\.|\s+import\b))", re.M)


def test_bench_never_imports_tests() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "bench").rglob("*.py"))
        if IMPORTS_TESTS.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_pattern_catches_each_way_of_importing_tests() -> None:
    for line in ("import tests.e2e.api", "from tests.e2e.conftest import X", "    from tests import support"):
        assert IMPORTS_TESTS.search(line), line
    assert not IMPORTS_TESTS.search("from edgecron_testing.receiver import Receiver")


def test_test_support_lives_outside_tests_and_is_importable() -> None:
    import edgecron_testing.harness
    import edgecron_testing.receiver

    assert not (ROOT / "tests" / "support").exists()
    assert Path(edgecron_testing.receiver.__file__).parent == ROOT / "testing" / "edgecron_testing"
    assert edgecron_testing.harness.ROOT == ROOT
