"""What only the SQLite system database does: its file, WAL, busy locks, ``:memory:``,
``sqlite:///`` URLs, its migration corpus, a cancellation check before every write, and its
peers on one file.

Everything the two backends share is ``tests/sysdb/test_conformance.py``, which runs on
both. Each test here opens a fresh database file (migrated by the open) and drives
:class:`SQLiteSystemDatabase`, looking at rows with a plain ``sqlite3`` connection of its
own; records and made-up times come from :mod:`support.sysdb_records`.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from dbos_trio import DBOSInitializationError
from dbos_trio._sysdb.migrations import LATEST_VERSION
from dbos_trio._sysdb.protocol import QueueContention
from dbos_trio._sysdb.sqlite import migrate
from dbos_trio._sysdb.sqlite.backend import SQLiteSystemDatabase
from dbos_trio._sysdb.wakeups import WakeupRegistry, message_key
from dbos_trio.testing import sqlite_url

from support.sysdb_records import APP, T0, claim_request, queued, step, workflow


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "system.sqlite"


@pytest.fixture
async def db(db_path: Path) -> AsyncIterator[SQLiteSystemDatabase]:
    backend = await SQLiteSystemDatabase.open(sqlite_url(db_path))
    try:
        yield backend
    finally:
        await backend.close()


def rows(path: Path, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """Read with a connection of the test's own."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()


# --- the file, its schema and its migrations ---------------------------------------------


async def test_a_fresh_file_is_migrated_to_the_latest_version_in_wal_mode(
    db: SQLiteSystemDatabase, db_path: Path
) -> None:
    assert rows(db_path, "SELECT version FROM dbos_migrations") == [(LATEST_VERSION,)]
    assert rows(db_path, "PRAGMA journal_mode") == [("wal",)]
    raw = db.connection.raw
    assert raw.execute("PRAGMA foreign_keys").fetchone() == (1,)
    assert raw.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    assert raw.execute("PRAGMA busy_timeout").fetchone() == (0,)


def test_the_corpus_numbers_sqlite_history_1_to_40_then_the_shared_100_to_125() -> None:
    versions = [m.version for m in migrate.load_migrations()]
    assert versions == [*range(1, 41), *range(100, 126)]
    empty = [m.version for m in migrate.load_migrations() if not m.statements]
    assert empty == [105, 113]  # PostgreSQL's SQL functions: nothing to do in SQLite


def _catalog(path: Path) -> dict[str, Any]:
    """Tables (columns, defaults, keys, foreign keys) and indexes, comparable across files."""
    conn = sqlite3.connect(path)
    try:
        catalog: dict[str, Any] = {}
        for kind, name, table in conn.execute(
            "SELECT type, name, tbl_name FROM sqlite_master ORDER BY name"
        ):
            if kind == "table":
                catalog[name] = (
                    conn.execute(f'PRAGMA table_xinfo("{name}")').fetchall(),
                    conn.execute(f'PRAGMA foreign_key_list("{name}")').fetchall(),
                )
            elif kind == "index":
                flags = conn.execute(
                    'SELECT "unique", "partial" FROM pragma_index_list(?) WHERE name = ?',
                    (table, name),
                ).fetchall()
                sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,))
                catalog[name] = (
                    table,
                    conn.execute(f'PRAGMA index_xinfo("{name}")').fetchall(),
                    flags,
                    " ".join((sql.fetchone()[0] or "").split()),
                )
        return catalog
    finally:
        conn.close()


def official_python() -> Path | None:
    """The official dbos 3.4's interpreter, as the interop tests install it (never here)."""
    configured = os.environ.get("DBOS_TRIO_OFFICIAL_VENV")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    major, minor = sys.version_info[:2]
    venv = (
        Path(configured)
        if configured
        else cache / "dbos_trio" / f"official-dbos-3.4-py{major}.{minor}"
    )
    python = venv / "bin" / "python"
    if (venv / ".dbos-trio-complete").exists() and python.exists():
        return python
    return None


# Replays the official SDK's own SQLite migration list the way its runner does.
OFFICIAL_MIGRATE = """
import sqlite3, sys
from dbos._migration import sqlite_migrations
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA foreign_keys=ON")
conn.execute("BEGIN IMMEDIATE")
conn.execute("CREATE TABLE dbos_migrations (version INTEGER NOT NULL PRIMARY KEY)")
for sql in sqlite_migrations:
    for statement in [s.strip() for s in sql.split(";") if s.strip()]:
        conn.execute(statement)
conn.execute("INSERT INTO dbos_migrations (version) VALUES (?)", (len(sqlite_migrations),))
conn.execute("COMMIT")
"""


def _official_database(path: Path) -> None:
    python = official_python()
    if python is None:
        pytest.skip(
            "the official dbos 3.4 virtualenv is not installed (see tests/integration/interop)"
        )
    subprocess.run([str(python), "-c", OFFICIAL_MIGRATE, str(path)], check=True, timeout=120)


async def test_the_schema_is_the_one_the_official_sdk_creates_in_sqlite(
    db: SQLiteSystemDatabase, db_path: Path, tmp_path: Path
) -> None:
    official = tmp_path / "official.sqlite"
    _official_database(official)
    ours, theirs = _catalog(db_path), _catalog(official)
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert ours[name] == theirs[name], name


async def test_a_database_the_official_sdk_migrated_opens_without_migrating(
    tmp_path: Path,
) -> None:
    official = tmp_path / "official.sqlite"
    _official_database(official)
    backend = await SQLiteSystemDatabase.open(sqlite_url(official), run_migrations=False)
    try:
        await backend.init_workflow(workflow("w"), None)
        await backend.record_step("owner-w", step(1), workflow_id="w", application_name=APP)
        assert list(await backend.load_steps("w")) == [1]
    finally:
        await backend.close()


async def test_migrating_again_changes_nothing_and_a_newer_database_is_left_alone(
    db_path: Path,
) -> None:
    url = sqlite_url(db_path)
    for _ in range(2):
        backend = await SQLiteSystemDatabase.open(url)
        assert await migrate.migrate(backend.connection) == []
        await backend.close()
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE dbos_migrations SET version = ?", (LATEST_VERSION + 5,))
    conn.commit()
    conn.close()
    backend = await SQLiteSystemDatabase.open(url)
    await backend.close()
    assert rows(db_path, "SELECT version FROM dbos_migrations") == [(LATEST_VERSION + 5,)]


async def test_without_migrations_a_missing_file_is_refused_and_not_created(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing.sqlite"
    with pytest.raises(DBOSInitializationError, match="does not exist"):
        await SQLiteSystemDatabase.open(sqlite_url(missing), run_migrations=False)
    assert not missing.exists()


async def test_without_migrations_a_database_behind_this_build_is_refused(db_path: Path) -> None:
    sqlite3.connect(db_path).close()  # exists, but empty
    with pytest.raises(DBOSInitializationError, match="behind"):
        await SQLiteSystemDatabase.open(sqlite_url(db_path), run_migrations=False)


async def test_urls_must_name_a_file_and_an_in_memory_database_works() -> None:
    for bad in ("sqlite://x.sqlite", "sqlite:///", "sqlite:///x.sqlite?mode=ro"):
        with pytest.raises(DBOSInitializationError):
            await SQLiteSystemDatabase.open(bad)
    backend = await SQLiteSystemDatabase.open("sqlite:///:memory:")
    try:
        assert (await backend.init_workflow(workflow("w"), None)).created
    finally:
        await backend.close()


# --- one writer at a time: another connection's lock ------------------------------------


async def test_a_claim_backs_off_while_another_connection_writes(
    db: SQLiteSystemDatabase, db_path: Path
) -> None:
    await db.init_workflow(queued("w"), None)
    other = sqlite3.connect(db_path, isolation_level=None, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(QueueContention):
            await db.claim(claim_request())
        other.execute("COMMIT")
    finally:
        other.close()
    assert len(await db.claim(claim_request())) == 1


async def test_a_write_waits_out_another_connection_without_blocking_the_loop(
    db: SQLiteSystemDatabase, db_path: Path
) -> None:
    other = sqlite3.connect(db_path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.sleep(0.001)

    async def release_later() -> None:
        await trio.sleep(0.05)
        other.execute("COMMIT")

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tick)
            nursery.start_soon(release_later)
            created = await db.init_workflow(workflow("w"), None)
            nursery.cancel_scope.cancel()
    finally:
        other.close()
    assert created.created
    assert db.connection.busy_retries > 0
    assert ticks > 5  # the loop kept running while the write waited


# --- other backends open on the same file -----------------------------------------------


async def test_writes_wake_waiters_of_every_backend_open_on_the_same_file(
    db: SQLiteSystemDatabase, db_path: Path
) -> None:
    other_registry = WakeupRegistry()
    other = await SQLiteSystemDatabase.open(sqlite_url(db_path), wakeups=other_registry)
    try:
        await db.init_workflow(workflow("dest"), None)
        key = message_key("dest", "t")
        with db.wakeups.subscribe(key) as here, other_registry.subscribe(key) as there:
            await db.send(
                destination_id="dest",
                topic="t",
                message="m",
                serialization=None,
                message_uuid="m",
                now_ms=T0,
                caller=None,
            )
            assert here.woken and there.woken
    finally:
        await other.close()
