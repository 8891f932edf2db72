"""Time discipline: the engine reads time only through Trio's clock.

The static check, on the source: no module of the library reads the wall clock or a
monotonic clock itself (only ``_clock.py`` may, and the driver and pool, whose real-time
limits around I/O go through ``_clock.real_time_limit``), and no PostgreSQL module puts a
Trio deadline around a database round trip. The dynamic check, that durable sleeps and
timeouts follow a ``MockClock``, is ``tests/engine/test_virtual_time.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "dbos_trio"

# Modules that may read real time: the clock itself, and the driver and pool, which
# bound I/O in real time (through _clock.real_time_limit).
# The payload store compares with its files' use times, which are the filesystem's clock.
REAL_TIME_MODULES = {"_clock.py", "_pg/driver.py", "_pg/pool.py", "_payload_store.py"}

# Calls that read a clock other than Trio's.
FORBIDDEN_CALLS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
    ("time", "sleep"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
}
# Trio deadlines: fine around waits for events or user code, wrong around a database
# round trip (the driver and backends must use real-time limits).
TRIO_DEADLINES = {"move_on_after", "move_on_at", "fail_after", "fail_at"}


def library_modules() -> list[tuple[str, ast.Module]]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        modules.append((relative, ast.parse(path.read_text("utf-8"), filename=str(path))))
    assert len(modules) > 20, "the package was not found"
    return modules


def dotted(node: ast.expr) -> tuple[str, ...]:
    """``a.b.c`` as ``("a", "b", "c")`` (empty if the expression is not a plain name)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ()
    parts.append(node.id)
    return tuple(reversed(parts))


def clock_reads(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = dotted(node.func)
            if len(name) >= 2 and name[-2:] in FORBIDDEN_CALLS:
                found.append(f"line {node.lineno}: {'.'.join(name)}()")
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            found.append(f"line {node.lineno}: from time import ...")
        elif isinstance(node, ast.Import) and any(a.name == "time" for a in node.names):
            found.append(f"line {node.lineno}: import time")
    return found


def test_the_engine_never_reads_the_wall_clock_or_a_monotonic_clock_itself() -> None:
    offenders = {
        relative: reads
        for relative, tree in library_modules()
        if relative not in REAL_TIME_MODULES and (reads := clock_reads(tree))
    }
    assert offenders == {}


def test_the_checker_would_notice_a_clock_read() -> None:
    tree = ast.parse(
        "import time\nfrom datetime import datetime\n"
        "a = time.time()\nb = datetime.now()\nc = time.monotonic()\n"
    )
    assert clock_reads(tree) == [
        "line 1: import time",
        "line 3: time.time()",
        "line 4: datetime.now()",
        "line 5: time.monotonic()",
    ]


def test_no_trio_deadline_surrounds_a_postgresql_round_trip() -> None:
    offenders = {}
    for relative, tree in library_modules():
        if not relative.startswith("sysdb/postgres/"):
            continue
        calls = [
            f"line {node.lineno}: {'.'.join(dotted(node.func))}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and dotted(node.func)[-1:]
            and dotted(node.func)[-1] in TRIO_DEADLINES
        ]
        if calls:
            offenders[relative] = calls
    assert offenders == {}
