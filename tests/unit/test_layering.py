"""The layers keep to their roles: routes reach DynamoDB only through services, and product code never
replaces a private attribute of a dependency (the emulator's work-arounds live in edgecron_cli.local)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROUTES = ROOT / "layers" / "core" / "edgecron" / "api" / "routes"
ABOVE_THE_DATA_LAYER = [ROOT / "layers" / "core" / "edgecron" / d for d in ("services", "api", "domain")]
PRODUCT = [ROOT / "layers" / "core" / "edgecron", ROOT / "functions"]


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_route_imports_the_data_layer() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if m.startswith("edgecron.data")
        )
        for path in ROUTES.glob("*.py")
    }
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def test_services_and_the_api_see_entities_never_the_data_layers_items() -> None:
    """The data layer maps its pynamodb items to entities: nothing above it imports them (or pynamodb)."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if m.startswith(("edgecron.data.models", "pynamodb"))
        )
        for base in ABOVE_THE_DATA_LAYER
        for path in base.rglob("*.py")
    }
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def test_product_code_assigns_no_private_attribute_of_another_module() -> None:
    found = []
    for base in PRODUCT:
        for path in base.rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                targets = node.targets if isinstance(node, ast.Assign) else []
                if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                    targets = [node.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and target.attr.startswith("_")
                        and not target.attr.startswith("__")
                        and not (isinstance(target.value, ast.Name) and target.value.id in {"self", "cls"})
                    ):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(target)}")
    assert found == []


CORE = ROOT / "layers" / "core"


def _module_graph() -> dict[str, set[str]]:
    """Every module of the core package and the core modules it imports, wherever in the file the
    import stands (an import made lazy inside a function still ties the two modules together)."""
    modules = {}
    for path in (CORE / "edgecron").rglob("*.py"):
        name = ".".join(path.relative_to(CORE).with_suffix("").parts).removesuffix(".__init__")
        modules[name] = path
    return {
        name: {m for m in imported_modules(path) if m in modules and m != name}
        for name, path in modules.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_core_package_has_no_import_circle() -> None:
    assert _cycles(_module_graph()) == []


FIRE_SETTLE_WRITES = ("fire_data.settle(", "fire_data.settle_unadmitted(", "fire_data.settle_from_run(")


def test_only_the_settle_module_writes_a_fires_final_status() -> None:
    """services/fires/settle.py is the one writer of a Fire's final status (and so always takes the
    after-settle step: failure count, a one-time schedule's end, the turn)."""
    owner = CORE / "edgecron" / "services" / "fires" / "settle.py"
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (CORE / "edgecron").rglob("*.py")
        if path != owner
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(call in line for call in FIRE_SETTLE_WRITES)
    ]
    assert offenders == []
