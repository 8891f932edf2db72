"""The layering of the package: every module imports only downward, and no import cycles.

A static check over the source (``ast``), counting every import — including those under
``if TYPE_CHECKING:`` and inside functions — because a type-only import still ties two
modules together for a reader, and a cycle hidden behind one is a cycle all the same.

The layers, top to bottom (docs/architecture.md draws them):

* face — ``DBOS`` (``_dbos``), ``Queue``, ``Client`` (``_client``), the CLI (``cli``), the
  dashboard, ``dbos_trio.testing``, ``dbos_trio.aio``, the package root;
* engine — ``dbos_trio._engine``: it knows the system-database protocol and the one factory
  that opens a backend (``_sysdb.open``), never a backend or a driver; inside it, the
  runtime (``_engine.runtime``) is the top, which no other engine package imports, and the
  executor's state (``_engine.state``), the workflow context (``_engine.context``, with its
  turn order) and the observability hooks are its bottom;
* sysdb — the protocol (``protocol``, ``records``, ``errors``, ``wakeups``, ``retry``), which
  imports no backend code, and the backends (the shared ``sql`` implementation,
  ``postgres``, ``sqlite``, statements, retries, migrations) over the Trio-native PostgreSQL
  connection layer (``_pg``, which knows nothing of DBOS); datasources likewise
  (``_datasource.protocol`` with the protocol, the rest of ``_datasource`` with the backends);
* foundations — clock, serialization, config, registry, identity;
* core — pure logic, and the error classes: no Trio, no psycopg, nothing above them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "dbos_trio"
ROOT = "dbos_trio"

# The error classes, and the two import-time helpers of the package root: pure, like core.
BASE = frozenset({f"{ROOT}.errors", f"{ROOT}._exports", f"{ROOT}._moved"})
FOUNDATIONS = frozenset(
    f"{ROOT}.{name}"
    for name in (
        "_clock",
        "_serialization",
        "_payload_store",
        "_payload_io",
        "_config",
        "_config_checks",
        "_redact",
        "_registry",
        "_identity",
    )
)
# The protocol's parts by concern (``_sysdb.interfaces``) are the protocol too.
PROTOCOL = frozenset(
    f"{ROOT}._sysdb.{name}"
    for name in (
        "protocol",
        "records",
        "similar",
        "bounded",
        "errors",
        "wakeups",
        "retry",
        "interfaces",
        *(
            f"interfaces.{concern}"
            for concern in (
                "lifecycle",
                "workflows",
                "queues",
                "messages",
                "schedules",
                "versions",
                "management",
                "inspection",
                "activity",
                "bundles",
            )
        ),
    )
)
FACTORY = f"{ROOT}._sysdb.open"
# Datasources (the application's own databases) are backend-level: their protocol sits with
# the system database's, their PostgreSQL and SQLite implementations with its backends.
DATASOURCE_PROTOCOL = frozenset({f"{ROOT}._datasource.protocol"})
# The engine's bottom: the executor's state, the ambient workflow context with the turn order
# it carries, and the observability hooks with the tracing and metrics behind them.
ENGINE_BOTTOM = frozenset(
    f"{ROOT}._engine.{name}"
    for name in (
        "state",
        "context",
        "workflows.turns",
        "observability.hooks",
        "observability.tracing",
        "observability.metrics",
    )
)


def layer_of(module: str) -> int:
    """0 core, 1 foundations, 2 sysdb protocol, 3 backends, 4 engine, 5 face."""
    if module.startswith(f"{ROOT}._core") or module in BASE:
        return 0
    if module in FOUNDATIONS:
        return 1
    if module in PROTOCOL or module == f"{ROOT}._sysdb" or module in DATASOURCE_PROTOCOL:
        return 2
    if module.startswith((f"{ROOT}._sysdb", f"{ROOT}._datasource", f"{ROOT}._pg")):
        return 3
    if module.startswith(f"{ROOT}._engine"):
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
    assert f"{ROOT}._engine.runtime.launch" in GRAPH
    assert f"{ROOT}._sysdb.sql.workflows" in GRAPH
    assert internal(GRAPH[f"{ROOT}._engine.runtime.launch"]), "imports were not resolved"


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


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith(f"{ROOT}._engine")))
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


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith(f"{ROOT}._engine.")))
def test_only_the_runtime_imports_the_runtime(module: str) -> None:
    if module.startswith(f"{ROOT}._engine.runtime"):
        return
    runtime = sorted(
        target for target in internal(GRAPH[module]) if target.startswith(f"{ROOT}._engine.runtime")
    )
    assert not runtime, f"{module} imports the runtime, the engine's top: {runtime}"


@pytest.mark.parametrize("module", sorted(ENGINE_BOTTOM))
def test_the_engine_bottom_imports_no_other_engine_module(module: str) -> None:
    engine = sorted(
        target
        for target in internal(GRAPH[module])
        if target.startswith(f"{ROOT}._engine.") and target not in ENGINE_BOTTOM
    )
    assert not engine, f"{module} is the engine's bottom and imports {engine}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith(f"{ROOT}._pg")))
def test_the_postgres_connection_layer_knows_nothing_of_dbos(module: str) -> None:
    allowed = {f"{ROOT}._clock", f"{ROOT}._redact", f"{ROOT}._pg"}
    other = sorted(
        target
        for target in internal(GRAPH[module])
        if target not in allowed and not target.startswith(f"{ROOT}._pg.")
    )
    assert not other, f"{module} imports {other}: the connection layer stands alone"


def test_every_package_states_its_layer_in_its_docstring() -> None:
    undocumented = sorted(
        module_name(path)
        for path in PACKAGE.rglob("__init__.py")
        if not ast.get_docstring(ast.parse(path.read_text()))
    )
    assert not undocumented, f"packages without a docstring: {undocumented}"


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
