"""Bring a PostgreSQL system schema up to :data:`LATEST_VERSION`, or check that it is.

The schema is shared with executors written with the official DBOS SDKs, so this runner follows
the contract they all follow:

* ``<schema>.dbos_migrations`` holds a single row: the highest applied version (INSERTed the
  first time, UPDATEd afterwards). Padding versions 48-99 and migrations left without SQL
  (LISTEN/NOTIFY parts skipped) are recorded by the next bump, never by a round trip each.
* Concurrent migrators (other processes, other SDKs) are serialized by the session advisory
  lock ``1234567890``, polled for a bounded real time; past that we proceed without it, as the
  official SDKs do, rather than hang startup.
* An ordinary migration and its version bump commit in ONE transaction, so a version is never
  recorded without its DDL nor DDL kept without its version.
* An online migration (``CREATE/DROP INDEX CONCURRENTLY``) cannot run in a transaction: it
  runs in autocommit, after dropping any index of the schema a failed concurrent build left
  INVALID (it would hold the name), and its version is bumped in a transaction of its own.
* A database recorded AHEAD of this build belongs to a newer peer and is left alone.
* Verification (``run_migrations=False``) reads, never creates.

It drives the connection it is given (our Trio psycopg driver's ``TrioConnection``, or any
``psycopg.AsyncConnection`` usable under the running loop), switching it to autocommit for
the duration, so the connection must have no transaction open.
"""

from __future__ import annotations

import logging
from typing import Any, TypeAlias

import attrs
import psycopg
import trio
from psycopg import pq, sql
from psycopg.rows import tuple_row

from dbos_trio._clock import monotonic, real_time_limit
from dbos_trio._redact import NO_SECRETS, Scrubber
from dbos_trio._sysdb.migrations import LATEST_VERSION, Migration, build_migrations
from dbos_trio.errors import DBOSInitializationError

logger = logging.getLogger("dbos_trio.migrate")

MIGRATION_LOCK_ID = 1234567890
"""The advisory lock every DBOS SDK takes around migrations (shared by contract)."""

DEFAULT_LOCK_TIMEOUT = 30.0
"""Seconds (real time) to wait for a concurrent migrator before proceeding without the lock."""

# Bounds for cleanup that must run even after cancellation (unlock, restore autocommit).
_CLEANUP_LIMIT_SECONDS = 5.0
_FIRST_POLL_SECONDS = 0.05
_MAX_POLL_SECONDS = 1.0

Conn: TypeAlias = psycopg.AsyncConnection[Any]


@attrs.frozen
class SchemaState:
    """What the database holds for one system schema."""

    schema_exists: bool
    table_exists: bool
    version: int | None
    """The recorded version; None when the table is missing or has no row yet."""


async def read_state(conn: Conn, schema: str) -> SchemaState:
    """Read the recorded version of ``schema`` without creating anything.

    Works on a connection in any transaction state and leaves that state as it found it.
    """
    async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(
            "SELECT n.oid IS NOT NULL, c.oid IS NOT NULL"
            " FROM (VALUES (1)) AS one (x)"
            " LEFT JOIN pg_catalog.pg_namespace AS n ON n.nspname = %s"
            " LEFT JOIN pg_catalog.pg_class AS c"
            "   ON c.relnamespace = n.oid AND c.relname = 'dbos_migrations'"
            "   AND c.relkind IN ('r', 'p')",
            (schema,),
            prepare=False,
        )
        row = await cur.fetchone()
        assert row is not None
        schema_exists, table_exists = bool(row[0]), bool(row[1])
        version: int | None = None
        if table_exists:
            await cur.execute(
                sql.SQL("SELECT max(version) FROM {}.dbos_migrations").format(
                    sql.Identifier(schema)
                ),
                prepare=False,
            )
            found = await cur.fetchone()
            version = None if found is None or found[0] is None else int(found[0])
    return SchemaState(schema_exists, table_exists, version)


async def verify(conn: Conn, schema: str = "dbos") -> int:
    """Check that ``schema`` is migrated at least to :data:`LATEST_VERSION`; create nothing.

    Returns the recorded version. Raises :class:`DBOSInitializationError` naming what was
    found and what is needed.
    """
    state = await read_state(conn, schema)
    # Worded for both openers that only verify: a Client (which never migrates) and a DBOS
    # launched with Config(run_migrations=False).
    remedy = (
        "This process only verifies the schema: migrate the system database first, with "
        "`dbos-trio migrate -s <url>` or by launching a DBOS once with "
        "Config(run_migrations=True), the default."
    )
    if not state.schema_exists:
        raise DBOSInitializationError(
            f"the system database has no schema {schema!r}, but this version of dbos_trio "
            f"needs it migrated to version {LATEST_VERSION}. {remedy}"
        )
    if not state.table_exists:
        raise DBOSInitializationError(
            f"system schema {schema!r} has no dbos_migrations table, but this version of "
            f"dbos_trio needs it migrated to version {LATEST_VERSION}. {remedy}"
        )
    found = state.version or 0
    if found < LATEST_VERSION:
        raise DBOSInitializationError(
            f"system schema {schema!r} is at migration version {found}, but this version of "
            f"dbos_trio needs version {LATEST_VERSION}. {remedy}"
        )
    logger.debug("system schema %r is at version %d (need %d)", schema, found, LATEST_VERSION)
    return found


async def ensure_schema(
    conn: Conn,
    schema: str = "dbos",
    *,
    run_migrations: bool = True,
    use_listen_notify: bool = True,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    scrub: Scrubber = NO_SECRETS,
) -> int:
    """Migrate (``run_migrations=True``) or only verify the system schema; return its version."""
    if run_migrations:
        return await migrate(
            conn,
            schema,
            use_listen_notify=use_listen_notify,
            lock_timeout=lock_timeout,
            scrub=scrub,
        )
    return await verify(conn, schema)


async def migrate(
    conn: Conn,
    schema: str = "dbos",
    *,
    use_listen_notify: bool = True,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    scrub: Scrubber = NO_SECRETS,
) -> int:
    """Apply the missing migrations to ``schema`` (creating it if needed); return its version.

    ``use_listen_notify=False`` leaves out the NOTIFY triggers (for deployments that poll).
    A no-op, without taking the lock, when the schema is already current or ahead. A
    driver error propagates as it is; cancellation stops between statements, and the
    cleanup (unlock, autocommit) runs shielded. ``scrub`` cleans the error texts it logs.
    """
    # Render first: a bad schema name fails here, before touching the database.
    migrations = build_migrations(schema, use_listen_notify)

    state = await read_state(conn, schema)
    if _is_current(schema, state):
        assert state.version is not None
        return state.version

    if conn.info.transaction_status != pq.TransactionStatus.IDLE:
        raise psycopg.ProgrammingError(
            "migrate() needs a connection with no transaction in progress "
            "(online migrations run in autocommit)"
        )
    was_autocommit = conn.autocommit
    # None while unknown: if acquiring is interrupted after the server granted the lock,
    # releasing it anyway is harmless (unlocking a lock not held only raises a notice).
    locked: bool | None = None
    try:
        await conn.set_autocommit(True)
        locked = await _acquire_lock(conn, lock_timeout)
        # A concurrent migrator may have finished while we waited.
        state = await read_state(conn, schema)
        if _is_current(schema, state):
            assert state.version is not None
            return state.version
        await _create_bookkeeping(conn, schema, state)
        return await _apply(conn, schema, migrations, state.version)
    finally:
        with trio.CancelScope(shield=True), real_time_limit(_CLEANUP_LIMIT_SECONDS):
            await _cleanup(conn, locked, was_autocommit, scrub)


def _is_current(schema: str, state: SchemaState) -> bool:
    if state.version is None or state.version < LATEST_VERSION:
        return False
    if state.version > LATEST_VERSION:
        logger.info(
            "system schema %r is at migration version %d, ahead of this build's %d: "
            "a newer DBOS peer migrated it; leaving it alone",
            schema,
            state.version,
            LATEST_VERSION,
        )
    return True


async def _acquire_lock(conn: Conn, limit_seconds: float) -> bool:
    deadline = monotonic() + limit_seconds
    pause = _FIRST_POLL_SECONDS
    while True:
        rows = await _rows(conn, "SELECT pg_catalog.pg_try_advisory_lock(%s)", (MIGRATION_LOCK_ID,))
        if rows[0][0]:
            return True
        if pause == _FIRST_POLL_SECONDS:
            logger.info("waiting for a concurrent migrator to release the migration lock")
        remaining = deadline - monotonic()
        if remaining <= 0:
            logger.warning(
                "could not take the migration advisory lock within %g s; migrating without it",
                limit_seconds,
            )
            return False
        await _sleep_real(min(pause, remaining))
        pause = min(pause * 2, _MAX_POLL_SECONDS)


async def _sleep_real(seconds: float) -> None:
    """Sleep in real time: a peer's migration takes real time even under a MockClock."""
    with real_time_limit(seconds):
        await trio.sleep_forever()


async def _create_bookkeeping(conn: Conn, schema: str, state: SchemaState) -> None:
    # Checked first rather than IF NOT EXISTS: CREATE SCHEMA needs the database's CREATE
    # privilege even when the schema is already there.
    ident = sql.Identifier(schema)
    async with conn.transaction():
        if not state.schema_exists:
            logger.info("creating system schema %r", schema)
            await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
        if not state.table_exists:
            await conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {}.dbos_migrations"
                    " (version BIGINT NOT NULL PRIMARY KEY)"
                ).format(ident)
            )


async def _apply(conn: Conn, schema: str, migrations: list[Migration], start: int | None) -> int:
    recorded = start or 0
    has_row = start is not None
    pending = [m for m in migrations if m.version > recorded]
    logger.info(
        "migrating system schema %r from version %d to %d", schema, recorded, LATEST_VERSION
    )
    for migration in pending:
        if migration.is_empty:
            # Its version is recorded by the next bump.
            continue
        logger.info(
            "applying system schema migration %d (%s)%s",
            migration.version,
            migration.name,
            ", online" if migration.online else "",
        )
        if migration.online:
            await _drop_invalid_indexes(conn, schema)
            await conn.execute(migration.sql, prepare=False)
            async with conn.transaction():
                await _record_version(conn, schema, migration.version, has_row)
        else:
            async with conn.transaction():
                await conn.execute(migration.sql, prepare=False)
                await _record_version(conn, schema, migration.version, has_row)
        recorded, has_row = migration.version, True
    if recorded < LATEST_VERSION:
        # Trailing migrations without SQL still count as applied.
        async with conn.transaction():
            await _record_version(conn, schema, LATEST_VERSION, has_row)
    logger.info("system schema %r is at version %d", schema, LATEST_VERSION)
    return LATEST_VERSION


async def _record_version(conn: Conn, schema: str, version: int, has_row: bool) -> None:
    # The version as a literal, not a parameter: with parameters psycopg reads every ``%``
    # of the composed text as one, including those of a schema named ``50%off``.
    ident, value = sql.Identifier(schema), sql.Literal(version)
    if has_row:
        query = sql.SQL("UPDATE {}.dbos_migrations SET version = {}").format(ident, value)
    else:
        query = sql.SQL("INSERT INTO {}.dbos_migrations (version) VALUES ({})").format(ident, value)
    await conn.execute(query, prepare=False)


async def _drop_invalid_indexes(conn: Conn, schema: str) -> None:
    """Drop indexes a failed CREATE INDEX CONCURRENTLY left INVALID in ``schema``.

    Such an index is never used but keeps its name, so the retried migration's
    ``IF NOT EXISTS`` would silently keep the broken index. We hold the migration lock, so
    no peer migrator is building one right now.
    """
    invalid = await _rows(
        conn,
        "SELECT i.relname FROM pg_catalog.pg_index AS x"
        " JOIN pg_catalog.pg_class AS i ON i.oid = x.indexrelid"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid = i.relnamespace"
        " WHERE NOT x.indisvalid AND n.nspname = %s",
        (schema,),
    )
    for (index_name,) in invalid:
        logger.warning(
            "dropping invalid index %r.%r left by an earlier failed migration",
            schema,
            index_name,
        )
        await conn.execute(
            sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}.{}").format(
                sql.Identifier(schema), sql.Identifier(index_name)
            ),
            prepare=False,
        )


async def _rows(conn: Conn, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Run a catalog query and fetch its rows as tuples, whatever the connection's row factory."""
    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(query, params, prepare=False)
        return await cur.fetchall()


async def _cleanup(conn: Conn, locked: bool | None, was_autocommit: bool, scrub: Scrubber) -> None:
    if conn.closed:
        return  # the session, and with it the advisory lock, is gone
    try:
        if locked is not False:
            await conn.execute(
                "SELECT pg_catalog.pg_advisory_unlock(%s)", (MIGRATION_LOCK_ID,), prepare=False
            )
        if not was_autocommit:
            await conn.set_autocommit(False)
    except psycopg.Error as error:
        # Closing the connection would release the lock; say so rather than mask the cause.
        logger.warning("could not release the migration lock cleanly: %s", scrub(error))
