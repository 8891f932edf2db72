"""Fixtures and helpers for the tests of durable workflows (issue 3).

* ``dbos_url``: a fresh database per test, copied from a template migrated once per session,
  as a ``postgresql://`` URL (what :class:`dbos_trio.Config` accepts).
* ``make_dbos``: a :class:`DBOS` on that database with test-friendly defaults.
* :func:`query` / :func:`execute`: look at and poke rows from the test, on a connection of
  the test's own (never the executor's pool).
* :func:`reexecute`: run a workflow body again from its stored row, as recovery would
  after a crash: the row is set back to PENDING under a new owner token and the engine runs
  it with its recorded checkpoints loaded.
* :class:`StatementCounter`: statements, round trips and commits issued through the Trio
  psycopg driver while it is installed.

Import the fixtures into a test module with ``from dbos_fixtures import dbos_url, ...``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import psycopg
import pytest
import trio
from pg_support import admin_url, create_database, drop_database, url_for_database
from psycopg import pq, sql
from psycopg.conninfo import conninfo_to_dict

from dbos_trio import DBOS, Config
from dbos_trio._dbos import WORKFLOW_ATTRIBUTE
from dbos_trio._registry import RegisteredWorkflow
from dbos_trio.engine import workflow as workflows
from dbos_trio.sysdb.postgres import migrate
from dbos_trio.sysdb.postgres.driver import TrioConnection, connect

APP_NAME = "wf-tests"


def as_url(conninfo: str) -> str:
    """A ``postgresql://`` URL for a libpq conninfo string (trust auth, no password)."""
    params = conninfo_to_dict(conninfo)
    user = params.get("user", "postgres")
    password = params.get("password")
    auth = f"{user}:{password}" if password else str(user)
    host = params.get("host", "127.0.0.1")
    port = params.get("port", "5432")
    return f"postgresql://{auth}@{host}:{port}/{params['dbname']}"


async def _migrate(conninfo: str) -> None:
    conn = await connect(conninfo, autocommit=True)
    try:
        await migrate.migrate(conn, "dbos")
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def migrated_template() -> Iterator[str]:
    """The name of a database migrated to the latest version, to copy for each test."""
    name = create_database("wftemplate")
    try:
        trio.run(_migrate, url_for_database(name))
        yield name
    finally:
        drop_database(name)


def _copy_database(template: str) -> str:
    """A new database copied from ``template``: FILE_COPY (PG 15+) is ~5x faster than the
    default WAL_LOG for a database this small."""
    name = f"dbos_trio_wf_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        strategy = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}" + strategy).format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    return name


@pytest.fixture
def dbos_url(migrated_template: str) -> Iterator[str]:
    """A fresh, already migrated database for this test, as a URL."""
    name = _copy_database(migrated_template)
    try:
        yield as_url(url_for_database(name))
    finally:
        drop_database(name)


@pytest.fixture
def make_dbos(dbos_url: str) -> Callable[..., DBOS]:
    """``make_dbos(**config)``: a DBOS on the test's database (app ``wf-tests``, v1)."""

    def make(**overrides: Any) -> DBOS:
        settings: dict[str, Any] = {
            "app_name": APP_NAME,
            "database_url": dbos_url,
            "app_version": "v1",
        }
        settings.update(overrides)
        return DBOS(Config(**settings))

    return make


@asynccontextmanager
async def connected(url: str) -> AsyncIterator[TrioConnection]:
    conn = await connect(url, autocommit=True)
    try:
        yield conn
    finally:
        await conn.close()


async def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` (``%s`` placeholders), read on a connection of the test's own."""
    async with connected(url) as conn:
        cur = await conn.execute(sql, params, prepare=False)
        if cur.description is None:
            return []
        rows: list[tuple[Any, ...]] = await cur.fetchall()
        return rows


async def execute(url: str, sql: str, *params: Any) -> int:
    """Run a writing statement; return the row count."""
    async with connected(url) as conn:
        cur = await conn.execute(sql, params, prepare=False)
        return cur.rowcount


async def status_row(url: str, workflow_id: str) -> dict[str, Any]:
    """The ``workflow_status`` row of ``workflow_id`` as a dict (raises if missing)."""
    async with connected(url) as conn:
        cur = await conn.execute(
            "SELECT * FROM dbos.workflow_status WHERE workflow_uuid = %s",
            (workflow_id,),
            prepare=False,
        )
        row = await cur.fetchone()
        assert row is not None, f"no workflow_status row for {workflow_id}"
        assert cur.description is not None
        return {column.name: value for column, value in zip(cur.description, row, strict=True)}


async def steps_of(url: str, workflow_id: str) -> list[tuple[int, str, str | None]]:
    """(function_id, function_name, child_workflow_id) of each checkpoint, in id order."""
    rows = await query(
        url,
        "SELECT function_id, function_name, child_workflow_id FROM dbos.operation_outputs "
        "WHERE workflow_uuid = %s ORDER BY function_id",
        workflow_id,
    )
    return [(r[0], r[1], r[2]) for r in rows]


async def count_rows(url: str, table: str) -> int:
    rows = await query(url, f"SELECT count(*) FROM dbos.{table}")
    return int(rows[0][0])


def registered_of(fn: Callable[..., Any]) -> RegisteredWorkflow:
    target = getattr(fn, "__func__", fn)
    registered = getattr(target, WORKFLOW_ATTRIBUTE)
    assert isinstance(registered, RegisteredWorkflow)
    return registered


async def reexecute(
    dbos: DBOS,
    url: str,
    fn: Callable[..., Any],
    workflow_id: str,
    *bound: Any,
) -> Any:
    """Run ``workflow_id`` again from its stored row, as recovery would after a crash.

    The row goes back to PENDING under a fresh owner token (what a claim does), then the
    engine runs ``fn``'s body with the stored inputs (``bound`` is prepended: the instance
    or class of a member workflow) and the recorded checkpoints loaded. Returns what the
    body returns, or raises what it raises.
    """
    executor = dbos._require_executor("reexecute")
    token = str(uuid.uuid4())
    changed = await execute(
        url,
        "UPDATE dbos.workflow_status SET status = 'PENDING', owner_xid = %s, "
        "completed_at = NULL WHERE workflow_uuid = %s",
        token,
        workflow_id,
    )
    assert changed == 1
    row = await executor.sysdb.get_workflow(workflow_id)
    assert row is not None
    args, kwargs = executor.codec.decode_inputs(row.inputs, row.serialization)
    plan = workflows.ExecutionPlan(
        registered=registered_of(fn),
        workflow_id=workflow_id,
        owner_xid=token,
        serialization=row.serialization or executor.codec.default_format,
        deadline_epoch_ms=None,
        args=tuple(bound) + tuple(args),
        kwargs=kwargs,
        replaying=True,
    )
    execution = executor.begin_local(workflow_id)
    return await workflows.execute(executor, plan, execution)


# --- counting what the driver sends ----------------------------------------------------


@attrs.define
class Counts:
    statements: int = 0
    round_trips: int = 0
    commits: int = 0

    def __sub__(self, other: Counts) -> Counts:
        return Counts(
            self.statements - other.statements,
            self.round_trips - other.round_trips,
            self.commits - other.commits,
        )


_IDLE = pq.TransactionStatus.IDLE
_INTRANS = pq.TransactionStatus.INTRANS


class StatementCounter:
    """Counts, for every :class:`TrioConnection` while installed:

    * statements: each ``execute`` call;
    * round trips: each conversation the driver runs with the server (``wait``);
    * commits: a statement that ran outside a transaction block and succeeded (an implicit
      autocommit transaction), or a transaction block that ended committed.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts = Counts()
        # When set, only what this task sends counts (not the executor's background tasks).
        self.task: trio.lowlevel.Task | None = None
        original_wait = TrioConnection.wait
        original_execute = TrioConnection.execute
        counter = self

        async def wait(self: TrioConnection, gen: Any, *args: Any, **kwargs: Any) -> Any:
            counted = counter.counts if counter.watching() else Counts()
            before = self.pgconn.transaction_status
            counted.round_trips += 1
            result = await original_wait(self, gen, *args, **kwargs)
            after = self.pgconn.transaction_status
            if before == _INTRANS and after == _IDLE:
                counted.commits += 1  # COMMIT of a block (a failed block is INERROR)
            return result

        async def execute(self: TrioConnection, *args: Any, **kwargs: Any) -> Any:
            counted = counter.counts if counter.watching() else Counts()
            counted.statements += 1
            implicit = self.autocommit and self.pgconn.transaction_status == _IDLE
            cur = await original_execute(self, *args, **kwargs)
            if implicit and self.pgconn.transaction_status == _IDLE:
                counted.commits += 1
            return cur

        monkeypatch.setattr(TrioConnection, "wait", wait)
        monkeypatch.setattr(TrioConnection, "execute", execute)

    def watching(self) -> bool:
        return self.task is None or trio.lowlevel.current_task() is self.task

    def snapshot(self) -> Counts:
        return Counts(self.counts.statements, self.counts.round_trips, self.counts.commits)


@pytest.fixture
def statement_counter(monkeypatch: pytest.MonkeyPatch) -> StatementCounter:
    return StatementCounter(monkeypatch)


async def wait_until(predicate: Callable[[], Any], *, timeout: float = 10.0) -> None:
    """Poll ``predicate`` (sync or async) until truthy, for at most ``timeout`` seconds."""
    with trio.fail_after(timeout):
        while True:
            value = predicate()
            if hasattr(value, "__await__"):
                value = await value
            if value:
                return
            await trio.sleep(0.01)


__all__ = [
    "APP_NAME",
    "Counts",
    "StatementCounter",
    "as_url",
    "count_rows",
    "dbos_url",
    "execute",
    "make_dbos",
    "migrated_template",
    "query",
    "reexecute",
    "registered_of",
    "statement_counter",
    "status_row",
    "steps_of",
    "wait_until",
]
