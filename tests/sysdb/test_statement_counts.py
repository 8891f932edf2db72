"""What a workflow costs the database: commits, statements and round trips.

The floor is one durable commit per checkpoint: a workflow with N steps that is not
replaying costs its start (one statement: the row and its inputs), one statement per step
and one for its outcome, N + 2 commits in all. These are regression tests of the counts,
not of time. Two independent counters:

* the Trio driver, instrumented (every ``execute``, every conversation with the server,
  every commit), which is exact for this process;
* ``pg_stat_database.xact_commit`` of the test's own database, read after the executor's
  connections have closed (a backend flushes its statistics when it exits). That counter
  takes every commit in the database, and a session that runs longer in real time (a
  loaded machine) has its background tasks poll, and commit, more often; so only what
  the workflows cause is compared: background sweeps are spaced an hour apart, the
  scheduler's start-up polls (every second, whatever the pacing) and anything else the
  executor's background tasks commit are counted at the driver and taken off, the pool
  holds one connection (a backend's start-up commits too, so the number of connections
  must not depend on timing), and autovacuum is off on the test database's tables (its
  workers commit there too; a visit that finds nothing to do still commits, hence a
  slack of three commits).

PostgreSQL only (``postgres_only_module``): both counters are PostgreSQL's — the instrumented
psycopg driver and ``pg_stat_database`` — so nothing here runs on SQLite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
from psycopg.conninfo import conninfo_to_dict

from dbos_trio import DBOS, SetWorkflowID
from dbos_trio._pg.connecting import connect
from dbos_trio.testing import launched

from support.backends import SCHEMA, execute, query
from support.dbos_fixtures import Counts, StatementCounter, reexecute
from support.pg_support import admin_url

pytestmark = pytest.mark.postgres_only_module(
    "the instrumented psycopg driver and pg_stat_database count PostgreSQL's statements"
)

MakeDBOS = Callable[..., DBOS]


def register(dbos: DBOS) -> tuple[Any, Any, Any]:
    @dbos.step()
    async def step(i: int) -> int:
        return i

    @dbos.workflow()
    async def ten_steps() -> int:
        total = 0
        for i in range(10):
            total += await step(i)
        return total

    @dbos.workflow()
    async def no_steps() -> int:
        return 0

    @dbos.workflow()
    async def with_child() -> int:
        return await no_steps()

    return ten_steps, no_steps, with_child


async def measure(counter: StatementCounter, workflow: Any, workflow_id: str) -> Counts:
    """What calling ``workflow`` sends from this task (where a direct call runs it), so
    the executor's background polling never lands in the count."""
    counter.task = trio.lowlevel.current_task()
    before = counter.snapshot()
    with SetWorkflowID(workflow_id):
        await workflow()
    return counter.snapshot() - before


async def test_a_ten_step_workflow_costs_twelve_commits_statements_and_round_trips(
    make_dbos: MakeDBOS, statement_counter: StatementCounter
) -> None:
    dbos = make_dbos()
    ten_steps, no_steps, with_child = register(dbos)
    async with dbos.launched():
        await measure(statement_counter, ten_steps, "warm-up")  # prepares hot statements
        ten = await measure(statement_counter, ten_steps, "ten-1")
        zero = await measure(statement_counter, no_steps, "zero-1")
        child = await measure(statement_counter, with_child, "child-1")
        repeat = await measure(statement_counter, ten_steps, "ten-1")

    assert ten == Counts(statements=12, round_trips=12, commits=12)
    assert zero == Counts(statements=2, round_trips=2, commits=2)
    # Parent start, child start with the parent's checkpoint, child outcome, the parent's
    # getResult checkpoint (from the outcome the child's execution holds), parent outcome.
    assert child == Counts(statements=5, round_trips=5, commits=5)
    # Calling a finished workflow again is one statement that returns its stored outcome.
    assert repeat == Counts(statements=1, round_trips=1, commits=1)


async def test_a_replayed_ten_step_workflow_loads_its_checkpoints_in_one_query(
    make_dbos: MakeDBOS, dbos_url: str, statement_counter: StatementCounter
) -> None:
    dbos = make_dbos()
    ten_steps, _, _ = register(dbos)
    async with dbos.launched():
        await measure(statement_counter, ten_steps, "ten-2")
        before = statement_counter.snapshot()
        assert await reexecute(dbos, dbos_url, ten_steps, "ten-2") == 45
        replay = statement_counter.snapshot() - before
    # reexecute itself: one UPDATE (its own connection) and one row read. The engine: one
    # query for all ten checkpoints and one outcome write.
    assert replay == Counts(statements=4, round_trips=4, commits=4)


async def _backends_of(database: str) -> int:
    conn = await connect(admin_url(), autocommit=True)
    try:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
        )
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])
    finally:
        await conn.close()


async def _commits_of(database: str) -> int:
    """``xact_commit`` of ``database`` once every backend connected to it has exited
    (and so flushed its statistics). Read from another database, so that the reading
    transactions are not counted."""
    with trio.fail_after(20):
        while True:
            if await _backends_of(database) == 0:
                break
            await trio.sleep(0.02)
    conn = await connect(admin_url(), autocommit=True)
    try:
        cur = await conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (database,)
        )
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])
    finally:
        await conn.close()


# Longer than any session below: the executor's paced background sweeps (dequeue
# supervisor, timeout, orphan and cancel sweeps, version census, heartbeat) run at most
# once per session, at launch, whatever the session's length in real time.
QUIESCED = 3600.0


async def _without_autovacuum(url: str) -> None:
    """Turn autovacuum off for the system tables of the test's own database: an autovacuum
    or autoanalyze worker commits in that database whenever the inserted rows pass its
    threshold, which is no commit of a workflow's."""
    tables = await query(url, "SELECT tablename FROM pg_tables WHERE schemaname = %s", SCHEMA)
    assert tables
    for (table,) in tables:
        await execute(url, f"ALTER TABLE {{t}}{table} SET (autovacuum_enabled = off)")


async def test_pg_stat_database_counts_at_most_twelve_commits_per_ten_step_workflow(
    make_dbos: MakeDBOS, dbos_url: str, statement_counter: StatementCounter
) -> None:
    database = str(conninfo_to_dict(dbos_url)["dbname"])
    runs = 20
    await _without_autovacuum(dbos_url)
    # The workflows run in this task (a direct call): every other task is the executor's.
    statement_counter.task = trio.lowlevel.current_task()

    async def session(count: int) -> int:
        """Commits of a launch, one warm-up workflow (statements get prepared on the
        connection), ``count`` measured workflows, and a shutdown, less those of the
        executor's background tasks."""
        before = await _commits_of(database)
        background = statement_counter.others_snapshot()
        # One pool connection (and the listener's), opened at launch whatever the timing:
        # a backend's start-up commits in the database too, so a second connection opened
        # when a background task happened to need one at the same moment as this task
        # would count. No session settings either, which commit on every new connection.
        dbos = make_dbos(idle_in_transaction_session_timeout=None, max_connections=1)
        ten_steps, _, _ = register(dbos)
        async with launched(dbos, background_interval=QUIESCED):
            for _ in range(count + 1):
                await ten_steps()
        committed = await _commits_of(database) - before
        return committed - (statement_counter.others_snapshot() - background).commits

    baseline = await session(0)
    measured = await session(runs)
    rows = await query(dbos_url, "SELECT count(*) FROM {t}operation_outputs")
    assert rows[0][0] == 10 * (runs + 2)
    # The two sessions differ only by the measured workflows: what a launch and a
    # shutdown commit is in both. The slack is for what no client sends: an autovacuum
    # worker visiting the database (which it does every so often even with autovacuum off
    # for every table) commits a transaction or two there. One extra commit per workflow
    # would be 20 more.
    extra = measured - baseline
    assert 12 * runs - 3 <= extra <= 12 * runs + 3, extra / runs
