"""Both system-database backends for the behavioural tests, and backend-neutral row helpers.

One parametrized fixture, ``backend`` (ids ``postgres`` and ``sqlite``), decides which
backend a test module runs on; every database fixture derives from it, so each test that
asks for a database runs once per backend:

* ``system_database_url``: a fresh, migrated database for this test — a ``postgresql://``
  URL of a copy of a database migrated once per session (dropped afterwards), or a
  ``sqlite:///`` URL of a copy, in the test's ``tmp_path``, of a file migrated once per
  session;
* ``module_database_url``: the same, shared by the tests of one module (tests that keep
  apart by application name, version and executor id);
* ``empty_database_url``: a new, empty PostgreSQL database (nobody migrated it).

This module is a plugin of ``tests/conftest.py``, so these fixtures exist everywhere. Two
markers (registered there, applied by :func:`apply_backend_markers`) keep PostgreSQL-only
tests off SQLite:

* ``pytestmark = pytest.mark.postgres_only_module("<why>")``: every test of the module
  covers a PostgreSQL-only mechanism, and the module says why; the SQLite runs of its
  tests are deselected at collection (they never ran, so they are not reported skipped);
* ``@pytest.mark.postgres_only("<the mechanism it covers>")`` on one test: its SQLite run
  is skipped, with that reason.

Looking at rows from a test: :func:`query` and :func:`execute` take PostgreSQL-style SQL
(``%s`` parameters, ``%%`` for a literal ``%``, tables written ``{t}workflow_status`` — so
no other braces) and run it on either backend, on a connection of the test's own (never
the executor's). SQLite hands back booleans as ``0``/``1``, which compare equal to
``False``/``True``.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from pathlib import Path
from typing import Any, Literal

import attrs
import psycopg
import pytest
import trio

from dbos_trio._pg.connecting import connect
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._sysdb.postgres import migrate as postgres_migrate
from dbos_trio._sysdb.sqlite.backend import SQLiteSystemDatabase
from dbos_trio.testing import sqlite_url

from support.pg_support import create_database, drop_database, fresh_database, url_for_database

Backend = Literal["postgres", "sqlite"]
BACKENDS: tuple[Backend, ...] = ("postgres", "sqlite")
SCHEMA = "dbos"


def backend_of(url: str) -> Backend:
    return "sqlite" if url.startswith("sqlite:") else "postgres"


POSTGRES_ONLY = "postgres_only(why): the test covers a PostgreSQL-only mechanism, named by why"
POSTGRES_ONLY_MODULE = (
    "postgres_only_module(why): every test of the module covers a PostgreSQL-only mechanism, "
    "named by why; their SQLite runs are deselected"
)


def apply_backend_markers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the SQLite runs of ``postgres_only_module`` modules' tests, and mark those of
    ``@pytest.mark.postgres_only(why)`` tests skipped, with why.

    Markers rather than a ``pytest.skip`` in the body: the decision is made before any
    database is made, and pytest-trio drops the reason of a skip raised in an async test.
    """
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_sqlite = callspec is not None and callspec.params.get("backend") == "sqlite"
        if on_sqlite and item.get_closest_marker("postgres_only_module") is not None:
            deselected.append(item)
            continue
        kept.append(item)
        marker = item.get_closest_marker("postgres_only")
        if on_sqlite and marker is not None:
            item.add_marker(pytest.mark.skip(reason=f"PostgreSQL only: {marker.args[0]}"))
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


# --- the fixtures ---------------------------------------------------------------------


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend this module's tests run on: each in turn."""
    chosen: Backend = request.param
    return chosen


async def migrate_postgres(url: str) -> None:
    """Migrate the PostgreSQL database at ``url`` (schema ``dbos``) to the latest version."""
    conn = await connect(url, autocommit=True)
    try:
        await postgres_migrate.migrate(conn, SCHEMA)
    finally:
        await conn.close()


async def _migrate_sqlite(path: Path) -> None:
    backend = await SQLiteSystemDatabase.open(sqlite_url(path))
    await backend.close()


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str]:
    """The name of a PostgreSQL database migrated once, to copy for each test."""
    name = create_database("template")
    try:
        trio.run(migrate_postgres, url_for_database(name))
        yield name
    finally:
        drop_database(name)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once (and closed, so its WAL is folded in), to copy."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.sqlite"
    trio.run(_migrate_sqlite, path)
    return path


@contextmanager
def _fresh_database(
    backend: Backend, request: pytest.FixtureRequest, directory: Path
) -> Iterator[str]:
    """A migrated database on ``backend``, copied from the session's template."""
    if backend == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = directory / "system.sqlite"
        shutil.copyfile(template, path)
        yield sqlite_url(path)
        return
    with fresh_database("test", template=request.getfixturevalue("postgres_template")) as url:
        yield url


@pytest.fixture
def system_database_url(
    backend: Backend, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[str]:
    """A fresh, migrated system database for this test, on this module's backend."""
    with _fresh_database(backend, request, tmp_path) as url:
        yield url


@pytest.fixture(scope="module")
def module_database_url(
    backend: Backend, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated system database shared by the tests of one module, on its backend."""
    with _fresh_database(backend, request, tmp_path_factory.mktemp("module-db")) as url:
        yield url


@pytest.fixture
def empty_database_url() -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped when the test ends."""
    with fresh_database("empty") as url:
        yield url


# --- looking at rows ----------------------------------------------------------------------


@attrs.frozen
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    rowcount: int


def sqlite_path(url: str) -> str:
    return url[len("sqlite:///") :]


def _for_sqlite(statement: str) -> str:
    # psycopg's placeholders and escaped percent signs, in sqlite3's terms.
    return re.sub(r"%[s%]", lambda m: "?" if m.group() == "%s" else "%", statement)


@asynccontextmanager
async def connected(
    url: str, *, autocommit: bool = True, **params: Any
) -> AsyncIterator[TrioConnection]:
    """A PostgreSQL connection of the test's own, closed after the block.

    Autocommit unless ``autocommit=False``; ``params`` (``connect_timeout``, libpq
    parameters, ...) go to the driver's :func:`~dbos_trio._pg.connecting.connect`.
    """
    conn = await connect(url, autocommit=autocommit, **params)
    try:
        yield conn
    finally:
        await conn.close()


def _run_sqlite(url: str, statement: str, params: tuple[Any, ...]) -> Result:
    # A writer of another process may hold the lock for a moment: wait for it (blocking).
    with closing(sqlite3.connect(sqlite_path(url), timeout=30, isolation_level=None)) as raw:
        cursor = raw.execute(_for_sqlite(statement.format(t="")), params)
        columns = [d[0] for d in cursor.description or ()]
        return Result(columns, cursor.fetchall() if columns else [], cursor.rowcount)


def run_blocking(url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """:func:`query` on a blocking connection, for code outside Trio (a worker thread, a
    helper process)."""
    if backend_of(url) == "sqlite":
        return _run_sqlite(url, statement, params).rows
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement.format(t=f"{SCHEMA}."), params)
        return cur.fetchall() if cur.description is not None else []


async def run(url: str, statement: str, *params: Any) -> Result:
    """Run one statement (PostgreSQL-style, ``{t}`` before table names) on either backend."""
    if backend_of(url) == "sqlite":
        return _run_sqlite(url, statement, params)
    async with connected(url) as conn:
        cur = await conn.execute(statement.format(t=f"{SCHEMA}."), params, prepare=False)
        if cur.description is None:
            return Result([], [], cur.rowcount)
        found: list[tuple[Any, ...]] = await cur.fetchall()
        return Result([c.name for c in cur.description], found, cur.rowcount)


async def query(url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows of ``statement`` (none for a write)."""
    return (await run(url, statement, *params)).rows


async def execute(url: str, statement: str, *params: Any) -> int:
    """Run a writing statement; return the row count."""
    return (await run(url, statement, *params)).rowcount


async def status_row(url: str, workflow_id: str) -> dict[str, Any]:
    """The ``workflow_status`` row of ``workflow_id`` as a dict (fails if missing)."""
    found = await run(url, "SELECT * FROM {t}workflow_status WHERE workflow_uuid = %s", workflow_id)
    assert found.rows, f"no workflow_status row for {workflow_id}"
    return dict(zip(found.columns, found.rows[0], strict=True))


async def steps_of(
    url: str, workflow_id: str, columns: str = "function_id, function_name, child_workflow_id"
) -> list[tuple[Any, ...]]:
    """``columns`` of each checkpoint of ``workflow_id`` (``operation_outputs``), in id order."""
    return await query(
        url,
        f"SELECT {columns} FROM {{t}}operation_outputs WHERE workflow_uuid = %s "
        "ORDER BY function_id",
        workflow_id,
    )


async def count_rows(url: str, table: str) -> int:
    rows = await query(url, "SELECT count(*) FROM {t}" + table)
    return int(rows[0][0])
