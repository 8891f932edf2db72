"""The layering of the package: every module imports only downward, and no import cycles.

A static check over the source (``ast``), counting every import — including those under
``if TYPE_CHECKING:`` and inside functions — because a type-only import still ties two
modules together for a reader, and a cycle hidden behind one is a cycle all the same.

The layers, top to bottom (see ../shared/docs/ARCHITECTURE.md):

* face — ``DBOS`` (``_dbos``), ``Queue``, ``Client``, the CLI, ``dbos_trio.testing``,
  the package root;
* engine — ``dbos_trio.engine``: it knows the system-database protocol and the one
  factory that opens a backend (``sysdb.open``), never a backend or a driver;
* sysdb — the protocol (``protocol``, ``records``, ``errors``, ``wakeups``, ``retry``), which
  imports no backend code, and the backends (the shared ``sql`` implementation,
  ``postgres``, ``sqlite``, statements, retries, migrations); datasources likewise
  (``datasource.protocol`` with the protocol, the rest of ``datasource`` with the backends);
* foundations — clock, serialization, config, registry, identity;
* core — pure logic, and the error classes: no Trio, no psycopg, nothing above them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "dbos_trio"
ROOT = "dbos_trio"

BASE = frozenset({f"{ROOT}._errors"})  # the error classes: pure, like core
FOUNDATIONS = frozenset(
    f"{ROOT}.{name}"
    for name in ("_clock", "_serialization", "_config", "_redact", "_registry", "_identity")
)
PROTOCOL = frozenset(
    f"{ROOT}.sysdb.{name}" for name in ("protocol", "records", "errors", "wakeups", "retry")
)
FACTORY = f"{ROOT}.sysdb.open"
# Datasources (the application's own databases) are backend-level: their protocol sits with
# the system database's, their PostgreSQL and SQLite implementations with its backends.
DATASOURCE_PROTOCOL = frozenset({f"{ROOT}.datasource.protocol"})


def layer_of(module: str) -> int:
    """0 core, 1 foundations, 2 sysdb protocol, 3 backends, 4 engine, 5 face."""
    if module.startswith(f"{ROOT}.core") or module in BASE:
        return 0
    if module in FOUNDATIONS:
        return 1
    if module in PROTOCOL or module == f"{ROOT}.sysdb" or module in DATASOURCE_PROTOCOL:
        return 2
    if module.startswith((f"{ROOT}.sysdb", f"{ROOT}.datasource")):
        return 3
    if module.startswith(f"{ROOT}.engine"):
        return 4
    return 5


LAYER_NAMES = ["core", "foundations", "sysdb protocol", "backends", "engine", "face"]


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports_of(path: Path) -> set[str]:
    """Every dbos_trio module (or package) ``path`` imports, and the outside top-level
    packages it imports (``trio``, ``psycopg``, ...)."""
    name = module_name(path)
    package = name if is_package(path) else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            # "from . import x" / "from .pkg import mod" may name modules, not attributes.
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                if _exists(candidate):
                    found.add(candidate)
    return found


def _exists(module: str) -> bool:
    if not module.startswith(ROOT):
        return False
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def library() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        graph[module_name(path)] = imports_of(path)
    return graph


GRAPH = library()


def internal(imports: set[str]) -> set[str]:
    return {target for target in imports if target.startswith(ROOT) and target in GRAPH}


def test_the_import_graph_covers_the_whole_package() -> None:
    assert f"{ROOT}.engine.launch" in GRAPH
    assert f"{ROOT}.sysdb.sql.workflows" in GRAPH
    assert internal(GRAPH[f"{ROOT}.engine.launch"]), "imports were not resolved"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_a_module_imports_only_its_own_layer_or_lower(module: str) -> None:
    own = layer_of(module)
    upward = sorted(
        f"{target} ({LAYER_NAMES[layer_of(target)]})"
        for target in internal(GRAPH[module])
        if layer_of(target) > own and not _is_parent_package(target, module)
    )
    assert not upward, f"{module} ({LAYER_NAMES[own]}) imports upward: {upward}"


def _is_parent_package(target: str, module: str) -> bool:
    # Importing a submodule runs its package's __init__; that is not a dependency on it.
    return module.startswith(target + ".")


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith(f"{ROOT}.engine")))
def test_the_engine_knows_the_protocol_and_the_factory_never_a_backend(module: str) -> None:
    backends = sorted(
        target for target in internal(GRAPH[module]) if layer_of(target) == 3 and target != FACTORY
    )
    assert not backends, f"{module} imports backend code: {backends}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if layer_of(m) <= 2))
def test_pure_and_protocol_modules_import_no_driver(module: str) -> None:
    drivers = {"psycopg", "sqlite3"} | ({"trio"} if layer_of(module) == 0 else set())
    used = sorted(target for target in GRAPH[module] if target.split(".")[0] in drivers)
    assert not used, f"{module} imports {used}"


def test_the_import_graph_has_no_cycle() -> None:
    edges = {
        module: {
            target
            for target in internal(imports)
            if target != module and not _is_parent_package(target, module)
        }
        for module, imports in GRAPH.items()
    }
    cycle = _find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> list[str] | None:
        if node in visiting:
            return [*visiting[visiting.index(node) :], node]
        if node in done:
            return None
        visiting.append(node)
        for target in sorted(edges.get(node, ())):
            found = visit(target)
            if found is not None:
                return found
        visiting.pop()
        done.add(node)
        return None

    for start in sorted(edges):
        found = visit(start)
        if found is not None:
            return found
    return None


def test_no_module_is_over_500_lines() -> None:
    long = {
        module_name(path): count
        for path in PACKAGE.rglob("*.py")
        if (count := len(path.read_text().splitlines())) > 500
    }
    assert not long, f"modules over 500 lines: {long}"


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None
