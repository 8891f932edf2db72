"""Bring a datasource's checkpoint table up to :data:`~.protocol.LATEST_VERSION`, or check it.

The contract is the official SDK's (3.4), so the two SDKs' datasources share a database:

* The version lives in the datasource's own table, ``dbos_datasource_migrations`` (one
  row, INSERTed the first time, UPDATEd afterwards), next to ``datasource_outputs`` — in
  the datasource's schema on PostgreSQL (default ``dbos``, possibly the system database's
  own), unqualified on SQLite. It is not the system database's ``dbos_migrations``.
* Migrating is one transaction: DDL and version commit together. Concurrent migrators
  serialize on it — on PostgreSQL under the transaction-scoped advisory lock both SDKs
  derive from the schema (the leading 8 bytes of SHA-256 of
  ``"dbos.datasource_migrations.<schema>"``, with an idle timeout so a frozen migrator
  cannot hold it forever); on SQLite under ``BEGIN IMMEDIATE``. The version is read
  again once the lock is held.
* A database at or ahead of this build's version is left alone (a newer peer's), and
  verification (``run_migrations=False``) reads, never creates.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from typing import Any

import psycopg
import trio

from dbos_trio._clock import monotonic
from dbos_trio._datasource.protocol import LATEST_VERSION, VERSIONS_TABLE
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._sysdb.migrations import quote_identifier
from dbos_trio._sysdb.sqlite.errors import is_busy
from dbos_trio._sysdb.statements import load_templates, render
from dbos_trio.errors import DBOSInitializationError

logger = logging.getLogger("dbos_trio._datasource")

MIGRATION_IDLE_TIMEOUT = "30s"
"""Longest a migrating transaction may sit idle holding the lock before the server ends it."""
SQLITE_BUSY_BUDGET_SECONDS = 30.0
"""Real seconds a SQLite migration waits for another process's write lock."""

_TEMPLATES = load_templates(__package__ or "dbos_trio._datasource", "migrations")


def migration_lock_key(schema: str) -> int:
    """The advisory lock key every SDK's datasource takes to migrate ``schema``."""
    digest = hashlib.sha256(f"dbos.datasource_migrations.{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _too_old(where: str, version: int) -> DBOSInitializationError:
    return DBOSInitializationError(
        f"the datasource {where} is at datasource schema version {version}, but this version "
        f"of dbos_trio needs {LATEST_VERSION}, and run_migrations is off: migrate it first "
        "(a datasource created with run_migrations=True does, at launch)"
    )


# --- PostgreSQL ---------------------------------------------------------------------------


async def _fetch(conn: TrioConnection, sql: str, params: Any = None) -> tuple[Any, ...] | None:
    cur = await conn.execute(sql, params)
    row: tuple[Any, ...] | None = await cur.fetchone()
    return row


async def _postgres_version(conn: TrioConnection, schema: str) -> int:
    # pg_catalog, not information_schema, which hides tables the role holds no grant on.
    exists = await _fetch(
        conn,
        "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = %s AND tablename = %s",
        (schema, VERSIONS_TABLE),
    )
    if exists is None:
        return 0
    row = await _fetch(conn, f"SELECT version FROM {quote_identifier(schema)}.{VERSIONS_TABLE}")
    return 0 if row is None else int(row[0])


async def migrate_postgres(conn: TrioConnection, schema: str, *, run_migrations: bool) -> int:
    """Migrate (or verify) the datasource ``schema`` on ``conn`` (autocommit, idle); the
    version it is at afterwards. :class:`~dbos_trio.DBOSInitializationError` if verifying
    finds it too old."""
    quoted = quote_identifier(schema)
    current = await _postgres_version(conn, schema)
    if current >= LATEST_VERSION:
        return current
    if not run_migrations:
        raise _too_old(f"schema {schema!r}", current)
    async with conn.transaction():
        await conn.execute(
            f"SET LOCAL idle_in_transaction_session_timeout = '{MIGRATION_IDLE_TIMEOUT}'"
        )
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (migration_lock_key(schema),))
        current = await _postgres_version(conn, schema)
        if current >= LATEST_VERSION:
            return current  # a concurrent migrator got there first
        # Look first: CREATE SCHEMA IF NOT EXISTS still demands the CREATE privilege.
        if (
            await _fetch(
                conn, "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s", (schema,)
            )
            is None
        ):
            await conn.execute(f"CREATE SCHEMA {quoted}")
        values = {"schema": quoted}
        if (
            current == 0
            and await _fetch(
                conn,
                "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = %s AND tablename = %s",
                (schema, VERSIONS_TABLE),
            )
            is None
        ):
            await conn.execute(render(_TEMPLATES["postgres_versions_table"], values))
        for version in range(current + 1, LATEST_VERSION + 1):
            logger.info("applying datasource migration %d to schema %s", version, schema)
            await conn.execute(render(_TEMPLATES[f"postgres_migration_{version}"], values))
        await _record_version(conn, f"{quoted}.{VERSIONS_TABLE}", current)
    return LATEST_VERSION


async def _record_version(conn: TrioConnection, table: str, previous: int) -> None:
    if previous == 0:
        await conn.execute(f"INSERT INTO {table} (version) VALUES (%s)", (LATEST_VERSION,))
    else:
        await conn.execute(f"UPDATE {table} SET version = %s", (LATEST_VERSION,))


# --- SQLite -------------------------------------------------------------------------------


def _sqlite_version(raw: sqlite3.Connection) -> int:
    exists = raw.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VERSIONS_TABLE,)
    ).fetchone()
    if exists is None:
        return 0
    row = raw.execute(f"SELECT version FROM {VERSIONS_TABLE}").fetchone()
    return 0 if row is None else int(row[0])


def _migrate_sqlite_locked(raw: sqlite3.Connection) -> int:
    """Inside ``BEGIN IMMEDIATE``: read the version again, and migrate from it."""
    current = _sqlite_version(raw)
    if current >= LATEST_VERSION:
        return current
    raw.execute(_TEMPLATES["sqlite_versions_table"])
    for version in range(current + 1, LATEST_VERSION + 1):
        logger.info("applying datasource migration %d to SQLite", version)
        raw.execute(_TEMPLATES[f"sqlite_migration_{version}"])
    if current == 0:
        raw.execute(f"INSERT INTO {VERSIONS_TABLE} (version) VALUES (?)", (LATEST_VERSION,))
    else:
        raw.execute(f"UPDATE {VERSIONS_TABLE} SET version = ?", (LATEST_VERSION,))
    return LATEST_VERSION


async def migrate_sqlite(raw: sqlite3.Connection, where: str, *, run_migrations: bool) -> int:
    """Migrate (or verify) a SQLite datasource on ``raw`` (autocommit, busy timeout 0);
    another process's write lock is waited out (Trio sleeps) for a bounded real time."""
    current = _sqlite_version(raw)
    if current >= LATEST_VERSION:
        return current
    if not run_migrations:
        raise _too_old(where, current)
    started = monotonic()
    pause = 0.005
    while True:
        try:
            raw.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if not is_busy(error) or monotonic() - started > SQLITE_BUSY_BUDGET_SECONDS:
                raise DBOSInitializationError(
                    f"cannot migrate the datasource {where}: {error}"
                ) from None
            await trio.sleep(pause)
            pause = min(pause * 2, 0.25)
            continue
        try:
            version = _migrate_sqlite_locked(raw)
            raw.execute("COMMIT")
        except BaseException:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise
        return version


def postgres_error(where: str, error: psycopg.Error) -> DBOSInitializationError:
    return DBOSInitializationError(f"cannot open the datasource {where}: {error}")
