"""Create or upgrade the SQLite system schema, or check that it is current.

The schema is the one every official DBOS SDK creates in SQLite, version for version, so
an official ``dbos`` process and dbos_trio can share one database file:

* Versions 1-40 are SQLite's own history (its numbers differ from PostgreSQL's below 100:
  SQLite skips PostgreSQL's stored functions and triggers, so its list is shorter), 41-99
  are padding, and from 100 on the numbers are shared by every SDK and backend. Versions
  105 and 113 change PostgreSQL's SQL functions and are empty here; they still count.
* ``dbos_migrations`` holds one row: the highest applied version (INSERTed the first time,
  UPDATEd afterwards). A database recorded *ahead* of this build is left alone.
* Every pending migration and the version bump commit in ONE transaction that begins with
  ``BEGIN IMMEDIATE`` (SQLite's DDL is transactional), so concurrent migrators serialize
  on the write lock and a version is never recorded without its DDL.
* Verification (``run_migrations=False``) reads, never creates (the backend refuses to open
  a missing file in that mode, since connecting would create it).

The corpus is ``migrations/sqlite/NNNN_short_name.sql`` (packaged in the wheel under
``dbos_trio/_migrations/sqlite``), plain SQL, statements separated by ``;``, each file
starting with a comment saying what and why.
"""

from __future__ import annotations

import functools
import logging
import re
import sqlite3

import attrs

from dbos_trio._sysdb.migrations import LATEST_VERSION, SHARED_MIGRATION_BASE, MigrationCorpusError
from dbos_trio._sysdb.migrations import migrations_dir as _corpus_root
from dbos_trio._sysdb.sqlite.connection import Connection
from dbos_trio.errors import DBOSInitializationError

logger = logging.getLogger("dbos_trio.migrate")

OWN_HISTORY_END = 40
"""The last version of SQLite's own history; 41-99 are padding."""

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@attrs.frozen
class SQLiteMigration:
    """One migration file: the statements that bring the schema to ``version``."""

    version: int
    name: str
    statements: tuple[str, ...]


def expected_versions() -> list[int]:
    return [*range(1, OWN_HISTORY_END + 1), *range(SHARED_MIGRATION_BASE, LATEST_VERSION + 1)]


def split_statements(text: str) -> tuple[str, ...]:
    """The statements of a migration: whole-line comments dropped, split on ``;`` (a
    ``;`` inside a string literal does not split, thanks to ``sqlite3.complete_statement``)."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    statements: list[str] = []
    pending = ""
    for piece in body.split(";"):
        pending = pending + piece if not pending else pending + ";" + piece
        if sqlite3.complete_statement(pending + ";"):
            if pending.strip():
                statements.append(pending.strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())  # no trailing semicolon
    return tuple(statements)


def parse_migration(file_name: str, text: str) -> SQLiteMigration:
    match = _FILE_NAME.match(file_name)
    if match is None:
        raise MigrationCorpusError(f"sqlite/{file_name}: not named NNNN_short_name.sql")
    if not text.startswith("-- "):
        raise MigrationCorpusError(
            f"sqlite/{file_name}: must start with a comment saying what and why"
        )
    return SQLiteMigration(int(match[1]), match[2], split_statements(text))


@functools.cache
def load_migrations() -> tuple[SQLiteMigration, ...]:
    """The whole SQLite corpus, checked for completeness, in version order."""
    directory = _corpus_root() / "sqlite"
    if not directory.is_dir():
        raise MigrationCorpusError(f"no SQLite migration files: {directory} is not a directory")
    migrations = sorted(
        (
            parse_migration(entry.name, entry.read_text(encoding="utf-8"))
            for entry in directory.iterdir()
            if entry.is_file() and entry.name.endswith(".sql")
        ),
        key=lambda migration: migration.version,
    )
    found = [migration.version for migration in migrations]
    if found != expected_versions():
        missing = sorted(set(expected_versions()) - set(found))
        extra = sorted(set(found) - set(expected_versions()))
        raise MigrationCorpusError(
            f"SQLite migration corpus in {directory} is incomplete or inconsistent: "
            f"missing {missing}, unexpected {extra}, found {len(found)} files"
        )
    return tuple(migrations)


def recorded_version(raw: sqlite3.Connection) -> int | None:
    """The version ``dbos_migrations`` records; None without the table or its row."""
    exists = raw.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dbos_migrations'"
    ).fetchone()
    if exists is None:
        return None
    row = raw.execute("SELECT version FROM dbos_migrations").fetchone()
    return None if row is None else int(row[0])


def _apply_pending(raw: sqlite3.Connection) -> list[int]:
    """Apply what is missing, inside the caller's write transaction; the versions applied."""
    version = recorded_version(raw)
    if version is not None and version >= LATEST_VERSION:
        return []
    if version is None:
        raw.execute(
            "CREATE TABLE IF NOT EXISTS dbos_migrations (version INTEGER NOT NULL PRIMARY KEY)"
        )
    applied: list[int] = []
    for migration in load_migrations():
        if version is not None and migration.version <= version:
            continue
        if migration.statements:
            # DEBUG: a fresh file applies every migration; migrate() logs one INFO line.
            logger.debug(
                "applying SQLite system database migration %d (%s)",
                migration.version,
                migration.name,
            )
        for statement in migration.statements:
            raw.execute(statement)
        applied.append(migration.version)
    if version is None and raw.execute("SELECT 1 FROM dbos_migrations").fetchone() is None:
        raw.execute("INSERT INTO dbos_migrations (version) VALUES (?)", (LATEST_VERSION,))
    else:
        raw.execute("UPDATE dbos_migrations SET version = ?", (LATEST_VERSION,))
    return applied


async def migrate(conn: Connection) -> list[int]:
    """Bring the database up to :data:`LATEST_VERSION`; the versions applied (maybe none)."""
    version = await conn.fetch(recorded_version)
    if version is not None and version >= LATEST_VERSION:
        if version > LATEST_VERSION:
            logger.info(
                "SQLite system database is at version %d, ahead of this build (%d): "
                "leaving it as it is",
                version,
                LATEST_VERSION,
            )
        return []
    applied = await conn.write(_apply_pending)
    if applied:
        logger.info(
            "SQLite system database migrated from version %s to %d (%d migrations)",
            version if version is not None else "none",
            LATEST_VERSION,
            len(applied),
        )
    return applied


async def verify(conn: Connection) -> None:
    """Raise :class:`DBOSInitializationError` unless the database is fully migrated."""
    version = await conn.fetch(recorded_version)
    if version is None or version < LATEST_VERSION:
        raise DBOSInitializationError(
            f"the SQLite system database {conn.path!r} is at version {version or 0}, behind "
            f"this build's {LATEST_VERSION}, and this process only verifies the schema: "
            "migrate it (`dbos-trio migrate -s <url>`, or launch a DBOS once with "
            "Config(run_migrations=True), the default)"
        )
