"""A fresh system database per test on each backend: the ``system_database_url`` fixture.

Adopt it in a test module the way the other fixture modules are adopted::

    from backends import postgres_template, sqlite_template, system_database_url

    async def test_something(system_database_url: str) -> None:
        dbos = DBOS(Config(app_name="t-app", database_url=system_database_url))
        ...

Every test asking for ``system_database_url`` runs twice, with ids ``postgres`` and
``sqlite``: a ``postgresql://`` URL of a new database copied from one migrated once per
session (dropped afterwards), or a ``sqlite:///`` URL of a copy, in the test's ``tmp_path``,
of a file migrated once per session. Tests of PostgreSQL-only mechanics (LISTEN/NOTIFY,
SKIP LOCKED contention, several processes, the interop checks) call
:func:`skip_unless_postgres` with the reason; :func:`backend_of` tells the two apart.

Looking at rows from a test: :func:`query` takes PostgreSQL-style SQL (``%s`` parameters,
tables written ``{t}workflow_status``, so no other braces) and runs it on either backend,
on a connection of the test's own.
"""

from __future__ import annotations

import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import psycopg
import pytest
import trio
from pg_support import admin_url, create_database, drop_database, url_for_database
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from dbos_trio.sysdb.postgres import migrate as postgres_migrate
from dbos_trio.sysdb.postgres.driver import connect
from dbos_trio.sysdb.sqlite.backend import SQLiteSystemDatabase
from dbos_trio.testing import sqlite_url

Backend = Literal["postgres", "sqlite"]
BACKENDS: tuple[Backend, ...] = ("postgres", "sqlite")
SCHEMA = "dbos"


def backend_of(url: str) -> Backend:
    return "sqlite" if url.startswith("sqlite:") else "postgres"


def skip_unless_postgres(url: str, why: str) -> None:
    """Skip this run on SQLite, saying which PostgreSQL-only mechanism the test covers."""
    if backend_of(url) == "sqlite":
        pytest.skip(f"PostgreSQL only: {why}")


def postgres_url(conninfo: str) -> str:
    """A ``postgresql://`` URL (what ``Config`` accepts) for a libpq conninfo string."""
    params = conninfo_to_dict(conninfo)
    user = params.get("user", "postgres")
    password = params.get("password")
    auth = f"{user}:{password}" if password else str(user)
    return (
        f"postgresql://{auth}@{params.get('host', '127.0.0.1')}:{params.get('port', '5432')}"
        f"/{params['dbname']}"
    )


async def _migrate_postgres(conninfo: str) -> None:
    conn = await connect(conninfo, autocommit=True)
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
    name = create_database("backends_template")
    try:
        trio.run(_migrate_postgres, url_for_database(name))
        yield name
    finally:
        drop_database(name)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once (and closed, so its WAL is folded in), to copy."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.sqlite"
    trio.run(_migrate_sqlite, path)
    return path


def _copy_postgres(template: str) -> str:
    name = f"dbos_trio_backends_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        strategy = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}" + strategy).format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
    return name


@pytest.fixture(params=BACKENDS)
def system_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated system database for this test, on each backend in turn."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path / "system.sqlite"
        shutil.copyfile(template, path)
        yield sqlite_url(path)
        return
    name = _copy_postgres(request.getfixturevalue("postgres_template"))
    try:
        yield postgres_url(url_for_database(name))
    finally:
        drop_database(name)


def _sqlite_path(url: str) -> str:
    return url[len("sqlite:///") :]


async def query(url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run ``statement`` on either backend: ``%s`` parameters, ``{t}`` before table names
    (``dbos.`` on PostgreSQL, nothing on SQLite). Returns the rows (none for a write)."""
    if backend_of(url) == "sqlite":
        conn = sqlite3.connect(_sqlite_path(url))
        try:
            cursor = conn.execute(statement.format(t="").replace("%s", "?"), params)
            found = cursor.fetchall()
            conn.commit()
            return found
        finally:
            conn.close()
    conn = await connect(url, autocommit=True)
    try:
        cursor = await conn.execute(statement.format(t=f"{SCHEMA}."), params, prepare=False)
        if cursor.description is None:
            return []
        found: list[tuple[Any, ...]] = await cursor.fetchall()
        return found
    finally:
        await conn.close()


__all__ = [
    "BACKENDS",
    "Backend",
    "backend_of",
    "postgres_template",
    "postgres_url",
    "query",
    "skip_unless_postgres",
    "sqlite_template",
    "system_database_url",
]
