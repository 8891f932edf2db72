"""Time discipline: the engine reads time only through Trio's clock.

Two checks. A static one: no module of the library reads the wall clock or a monotonic
clock itself (only ``_clock.py`` may, and the driver and pool, whose real-time limits
around I/O go through ``_clock.real_time_limit``), and no PostgreSQL module puts a Trio
deadline around a database round trip. A dynamic one: under ``MockClock(rate=10)`` —
virtual time running ten times faster than real time, *not* the autojump clock, under
which a task waiting on a PostgreSQL socket counts as idle — durable sleeps and timeouts
take a tenth of their nominal real time and are recorded in the clock's epoch.
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from dbos_trio import DBOS

from support.backends import query, status_row
from support.time_fixtures import running

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "dbos_trio"

# Modules that may read real time: the clock itself, and the driver and pool, which
# bound I/O in real time (through _clock.real_time_limit).
REAL_TIME_MODULES = {"_clock.py", "sysdb/postgres/driver.py", "sysdb/postgres/pool.py"}

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


@pytest.fixture
def fast_clock() -> trio.testing.MockClock:
    """Virtual time at ten times real time (pytest-trio runs the test on this clock)."""
    return trio.testing.MockClock(rate=10)


async def test_a_durable_sleep_follows_the_trio_clock(
    fast_clock: trio.testing.MockClock, new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def sleeper() -> str:
        await dbos.sleep(5)
        return "woke"

    async with running(dbos):
        real_start, trio_start = time.monotonic(), trio.current_time()
        handle = await dbos.start_workflow(sleeper)
        assert await handle.get_result() == "woke"
        real_elapsed = time.monotonic() - real_start
        trio_elapsed = trio.current_time() - trio_start
        wall_now = time.time()

    assert trio_elapsed >= 5.0
    assert 0.4 < real_elapsed < 2.0  # a tenth of the nominal 5 s (plus round trips)
    [(output, started_at, completed_at)] = await query(
        db_url,
        "SELECT output, started_at_epoch_ms, completed_at_epoch_ms FROM {t}operation_outputs "
        "WHERE workflow_uuid = %s AND function_name = 'DBOS.sleep'",
        handle.workflow_id,
    )
    wake = json.loads(output)
    # The wake time is 5 s after the sleep began, in the clock's epoch...
    assert wake - started_at / 1000 == pytest.approx(5.0, abs=0.2)
    assert completed_at == int(wake * 1000)
    row = await status_row(db_url, handle.workflow_id)
    assert row["updated_at"] - row["created_at"] >= 5000
    # ... which ran ahead of the wall clock: the sleep did not wait for real time.
    assert wake - wall_now > 3.0


async def test_recv_and_get_event_timeouts_and_fallback_polling_follow_the_trio_clock(
    fast_clock: trio.testing.MockClock, new_dbos: Callable[..., DBOS]
) -> None:
    writer = new_dbos(use_listen_notify=False, executor_id="writer")
    reader = new_dbos(use_listen_notify=False, executor_id="reader")
    go = trio.Event()

    @writer.workflow()
    async def receiver() -> object:
        return await writer.recv("t", timeout_seconds=3)

    @writer.workflow()
    async def setter() -> None:
        await go.wait()
        await writer.set_event("k", "v")

    async with running(writer), running(reader):
        real_start = time.monotonic()
        handle = await writer.start_workflow(receiver)
        assert await handle.get_result() is None
        assert 0.25 < time.monotonic() - real_start < 1.5  # 3 virtual seconds

        real_start = time.monotonic()
        assert await reader.get_event("nobody", "k", timeout_seconds=3) is None
        assert 0.25 < time.monotonic() - real_start < 1.5

        # With notifications off another executor is found by its 1 s (virtual) re-check.
        handle = await writer.start_workflow(setter)
        async with trio.open_nursery() as nursery:

            async def set_soon() -> None:
                await trio.sleep(2)  # virtual: the reader has been waiting a while
                go.set()

            nursery.start_soon(set_soon)
            real_start = time.monotonic()
            assert await reader.get_event(handle.workflow_id, "k", timeout_seconds=30) == "v"
            assert time.monotonic() - real_start < 1.0  # 2 + at most 1 virtual seconds
        await handle.get_result()
