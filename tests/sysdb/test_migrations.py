"""The migration corpus and runner reproduce the system schema of the official DBOS SDKs.

The bar is ``tests/sysdb/snapshots/official_dbos_3_4_catalog.txt`` (and its ``_no_listen_notify``
twin): the catalog of an empty database migrated by the official ``dbos`` 3.4 package, dumped
with the same query (``tests/support/catalog.py``) we use on ours. The dumps must be IDENTICAL.

To regenerate the snapshots (only ever from the official package, never from our runner),
from the repository root::

    python -m venv /tmp/dbos-official
    /tmp/dbos-official/bin/pip install 'dbos==3.4.*'
    /tmp/dbos-official/bin/python tests/sysdb/snapshots/make_official_catalog.py

It uses the same PostgreSQL as these tests (``DBOS_TRIO_TEST_POSTGRES_URL`` or the local
trust-auth cluster) and rewrites both snapshot files.
"""

from __future__ import annotations

import difflib
import logging
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio
from psycopg import sql

from dbos_trio._sysdb import migrations
from dbos_trio._sysdb.migrations import (
    LATEST_VERSION,
    MigrationCorpusError,
    build_migrations,
    parse_migration,
    quote_identifier,
)
from dbos_trio._sysdb.postgres import migrate as runner
from dbos_trio.errors import DBOSInitializationError

from support.backends import connected
from support.catalog import dump_catalog
from support.dbos_fixtures import StatementCounter

SNAPSHOTS = Path(__file__).parent / "snapshots"
OFFICIAL = SNAPSHOTS / "official_dbos_3_4_catalog.txt"
OFFICIAL_NO_LISTEN_NOTIFY = SNAPSHOTS / "official_dbos_3_4_catalog_no_listen_notify.txt"
ODD_SCHEMA = 'My Schema"x'

ONLINE_AT_125 = {
    *range(22, 28), *range(29, 33), 34, 35, 37, 45, 46, 47,
    107, 111, *range(114, 121), 122, 124, 125,
}  # fmt: skip


# ---------------------------------------------------------------------------- helpers


def catalog_of(url: str, schema: str) -> str:
    with psycopg.connect(url) as conn:
        return dump_catalog(conn, schema)


def assert_same_catalog(expected_file: Path, actual: str) -> None:
    expected = expected_file.read_text()
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=f"official ({expected_file.name})",
                tofile="dbos_trio",
            )
        )
        pytest.fail(f"catalog differs from the official dbos 3.4 snapshot:\n{diff}")


def sync_query(url: str, query: Any, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


def recorded_versions(url: str, schema: str) -> list[int]:
    rows = sync_query(
        url,
        sql.SQL("SELECT version FROM {}.dbos_migrations").format(sql.Identifier(schema)),
    )
    return [int(row[0]) for row in rows]


def schema_exists(url: str, schema: str) -> bool:
    return bool(sync_query(url, "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)))


def make_bookkeeping(url: str, schema: str, version: int) -> None:
    """A schema whose dbos_migrations records ``version`` (as a peer SDK would leave it)."""
    ident = sql.Identifier(schema)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(ident))
        conn.execute(
            sql.SQL("CREATE TABLE {}.dbos_migrations (version BIGINT NOT NULL PRIMARY KEY)").format(
                ident
            )
        )
        conn.execute(
            sql.SQL("INSERT INTO {}.dbos_migrations VALUES (%s)").format(ident), (version,)
        )


# ---------------------------------------------------------------------------- the corpus


def test_corpus_has_every_version_and_the_official_online_set() -> None:
    built = build_migrations("dbos", use_listen_notify=True)
    versions = [m.version for m in built]
    assert versions == [*range(1, 48), *range(100, 126)]
    assert LATEST_VERSION == 125 == versions[-1]
    assert {m.version for m in built if m.online} == ONLINE_AT_125
    assert not any(m.is_empty for m in built)
    for m in built:
        assert "{{" not in m.sql
        assert m.name and m.name == m.name.lower()
        if m.online:
            assert "CONCURRENTLY" in m.sql


def test_corpus_renders_the_schema_as_a_quoted_identifier() -> None:
    assert quote_identifier("dbos") == '"dbos"'
    assert quote_identifier(ODD_SCHEMA) == '"My Schema""x"'
    first = build_migrations(ODD_SCHEMA)[0].sql
    assert 'CREATE TABLE "My Schema""x".workflow_status (' in first
    assert '"dbos"' not in first
    for bad in ("", "a" * 64, "nul\x00"):
        with pytest.raises(ValueError):
            build_migrations(bad)
    # A name that would close a dollar-quoted function body is refused, not rendered.
    with pytest.raises(ValueError, match="dollar quote"):
        build_migrations("x$dbos_fn$y")


def test_corpus_without_listen_notify_drops_only_the_notify_parts() -> None:
    with_ln = {m.version: m for m in build_migrations("dbos", use_listen_notify=True)}
    without = {m.version: m for m in build_migrations("dbos", use_listen_notify=False)}
    assert {v for v, m in without.items() if m.is_empty} == {39, 43, 44}
    changed = {v for v in with_ln if with_ln[v].sql != without[v].sql}
    assert changed == {1, 20, 39, 43, 44}
    assert "TRIGGER" not in without[1].sql and "pg_notify" not in without[1].sql
    assert "CREATE TABLE" in without[1].sql
    assert "notifications_function" not in without[20].sql
    assert "send_message" in without[20].sql


def test_corpus_conventions_are_enforced() -> None:
    good = parse_migration("0007_x.sql", "-- why\nSELECT 1;\n")
    assert (good.version, good.name, good.online) == (7, "x", False)
    bad_files = {
        "7_x.sql": "-- why\nSELECT 1;\n",
        "0008_x.sql": "SELECT 1; -- no header comment\n",
        "0009_x.sql": "-- why\n-- begin listen_notify\nSELECT 1;\n",
        "0010_x.sql": "-- why\n-- end listen_notify\n",
        "0011_x.sql": "-- why\nSELECT {{schem}}.x;\n",
        "0012_x.sql": "-- online\n-- why\nCREATE INDEX CONCURRENTLY a ON t (x); SELECT 1;\n",
        "0013_x.sql": "-- online\n-- why\nCREATE INDEX a ON t (x);\n",
    }
    for name, text in bad_files.items():
        with pytest.raises(MigrationCorpusError):
            parse_migration(name, text)


def test_corpus_is_read_from_the_checkout_in_a_source_tree() -> None:
    directory = migrations.migrations_dir()
    assert (directory / "0001_base_schema.sql").is_file()


# ---------------------------------------------------------------------------- the runner


async def test_migrating_an_empty_database_matches_official_dbos(
    empty_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="dbos_trio.migrate")
    async with connected(empty_database_url, autocommit=False) as conn:
        started = time.monotonic()
        version = await runner.migrate(conn)
        elapsed = time.monotonic() - started
        # The connection is handed back as it came: not autocommit, nothing open.
        assert not conn.autocommit
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    print(f"full migration of an empty database: {elapsed:.3f} s")
    assert version == LATEST_VERSION
    assert recorded_versions(empty_database_url, "dbos") == [LATEST_VERSION]
    assert_same_catalog(OFFICIAL, catalog_of(empty_database_url, "dbos"))
    assert any("migration 125" in r.getMessage() for r in caplog.records)
    assert all("password" not in r.getMessage() for r in caplog.records)


async def test_without_listen_notify_there_are_no_triggers(empty_database_url: str) -> None:
    async with connected(empty_database_url, autocommit=False) as conn:
        assert await runner.migrate(conn, use_listen_notify=False) == LATEST_VERSION
    assert recorded_versions(empty_database_url, "dbos") == [LATEST_VERSION]
    catalog = catalog_of(empty_database_url, "dbos")
    assert "trigger " not in catalog and "returns=trigger" not in catalog
    assert_same_catalog(OFFICIAL_NO_LISTEN_NOTIFY, catalog)


async def test_a_schema_name_that_needs_quoting(empty_database_url: str) -> None:
    async with connected(empty_database_url, autocommit=False) as conn:
        assert await runner.migrate(conn, ODD_SCHEMA) == LATEST_VERSION
        assert await runner.verify(conn, ODD_SCHEMA) == LATEST_VERSION
    assert not schema_exists(empty_database_url, "dbos")
    assert recorded_versions(empty_database_url, ODD_SCHEMA) == [LATEST_VERSION]
    assert_same_catalog(OFFICIAL, catalog_of(empty_database_url, ODD_SCHEMA))


async def test_two_concurrent_migrations_both_succeed(
    empty_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="dbos_trio.migrate")
    results: list[int] = []

    async def one_migrator() -> None:
        async with connected(empty_database_url, autocommit=False) as conn:
            results.append(await runner.migrate(conn))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(one_migrator)
        nursery.start_soon(one_migrator)
    assert results == [LATEST_VERSION, LATEST_VERSION]
    # The lock serialized them: one applied each migration, the other found the work done.
    applied = [r.getMessage() for r in caplog.records if "applying" in r.getMessage()]
    assert len(applied) == len(build_migrations()) == len(set(applied))
    assert recorded_versions(empty_database_url, "dbos") == [LATEST_VERSION]
    assert_same_catalog(OFFICIAL, catalog_of(empty_database_url, "dbos"))


async def test_rerunning_is_a_no_op(
    empty_database_url: str, statement_counter: StatementCounter
) -> None:
    async with connected(empty_database_url, autocommit=False) as conn:
        await runner.migrate(conn)
    # Record every DDL command the database runs from now on.
    with psycopg.connect(empty_database_url, autocommit=True) as admin:
        admin.execute("CREATE TABLE public.ddl_log (tag TEXT)")
        admin.execute(
            "CREATE FUNCTION public.log_ddl() RETURNS event_trigger LANGUAGE plpgsql AS"
            " $$ BEGIN INSERT INTO public.ddl_log VALUES (tg_tag); END $$"
        )
        admin.execute(
            "CREATE EVENT TRIGGER log_ddl ON ddl_command_start EXECUTE FUNCTION public.log_ddl()"
        )
    reruns = []
    async with connected(empty_database_url, autocommit=False) as conn:
        for use_listen_notify in (True, False):
            before = statement_counter.snapshot()
            version = await runner.migrate(conn, use_listen_notify=use_listen_notify)
            assert version == LATEST_VERSION
            reruns.append(statement_counter.snapshot() - before)
    assert sync_query(empty_database_url, "SELECT tag FROM public.ddl_log") == []
    # Each rerun reads the recorded state and stops: a fixed handful of round trips and
    # one commit, not a pass over every migration's checks.
    assert all(r.round_trips <= 4 and r.commits <= 1 for r in reruns), reruns
    assert recorded_versions(empty_database_url, "dbos") == [LATEST_VERSION]
    assert_same_catalog(OFFICIAL, catalog_of(empty_database_url, "dbos"))


async def test_an_invalid_index_from_a_failed_online_build_is_replaced(
    empty_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with connected(empty_database_url, autocommit=False) as conn:
        await runner.migrate(conn)
    # Rewind to just before migration 115 and leave what a failed concurrent build of its
    # index leaves behind: an INVALID index holding the name.
    with psycopg.connect(empty_database_url, autocommit=True) as admin:
        admin.execute("DROP INDEX dbos.idx_workflow_status_in_flight_v2")
        admin.execute("UPDATE dbos.dbos_migrations SET version = 114")
        admin.execute(
            "INSERT INTO dbos.workflow_status (workflow_uuid, queue_name)"
            " VALUES ('a', 'q'), ('b', 'q')"
        )
        with pytest.raises(psycopg.errors.UniqueViolation):
            admin.execute(
                "CREATE UNIQUE INDEX CONCURRENTLY idx_workflow_status_in_flight_v2"
                " ON dbos.workflow_status (queue_name)"
            )
    assert "[INVALID]" in catalog_of(empty_database_url, "dbos")

    caplog.set_level(logging.INFO, logger="dbos_trio.migrate")
    async with connected(empty_database_url, autocommit=False) as conn:
        assert await runner.migrate(conn) == LATEST_VERSION
    assert any("invalid index" in r.getMessage() for r in caplog.records)
    assert recorded_versions(empty_database_url, "dbos") == [LATEST_VERSION]
    assert_same_catalog(OFFICIAL, catalog_of(empty_database_url, "dbos"))


async def test_a_failed_migration_records_nothing_and_releases_the_lock(
    empty_database_url: str,
) -> None:
    # A stray table in the way makes migration 1 fail.
    with psycopg.connect(empty_database_url, autocommit=True) as admin:
        admin.execute("CREATE SCHEMA dbos")
        admin.execute("CREATE TABLE dbos.streams (x INT)")
    async with connected(empty_database_url, autocommit=False) as conn:
        with pytest.raises(psycopg.errors.DuplicateTable):
            await runner.migrate(conn)
        assert not conn.autocommit
    # Migration 1's DDL and its version were rolled back together ...
    assert recorded_versions(empty_database_url, "dbos") == []
    tables = sync_query(
        empty_database_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'dbos'"
    )
    assert sorted(t for (t,) in tables) == ["dbos_migrations", "streams"]
    # ... and the advisory lock is free for the next migrator.
    rows = sync_query(empty_database_url, "SELECT pg_try_advisory_lock(%s)", (1234567890,))
    assert rows == [(True,)]
    # Once the obstacle is gone, a retry completes.
    with psycopg.connect(empty_database_url, autocommit=True) as admin:
        admin.execute("DROP TABLE dbos.streams")
    async with connected(empty_database_url, autocommit=False) as conn:
        assert await runner.migrate(conn) == LATEST_VERSION
    assert_same_catalog(OFFICIAL, catalog_of(empty_database_url, "dbos"))


async def test_cancelling_a_migration_midway_leaves_a_resumable_database(
    empty_database_url: str,
) -> None:
    class CancelAt(logging.Handler):
        """Cancel the migration as soon as it announces the online migration 23."""

        def __init__(self, scope: trio.CancelScope) -> None:
            super().__init__()
            self.scope = scope

        def emit(self, record: logging.LogRecord) -> None:
            if "migration 23 " in record.getMessage():
                self.scope.cancel()

    logger = logging.getLogger("dbos_trio.migrate")
    async with connected(empty_database_url, autocommit=False) as conn:
        with trio.CancelScope() as scope:
            handler = CancelAt(scope)
            logger.addHandler(handler)
            old_level = logger.level
            logger.setLevel(logging.INFO)
            try:
                await runner.migrate(conn)
            finally:
                logger.removeHandler(handler)
                logger.setLevel(old_level)
        assert scope.cancelled_caught
        # Cleanup ran despite the cancellation: connection usable and as it was given.
        assert not conn.autocommit
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert recorded_versions(empty_database_url, "dbos") == [22]
    rows = sync_query(empty_database_url, "SELECT pg_try_advisory_lock(%s)", (1234567890,))
    assert rows == [(True,)]
    async with connected(empty_database_url, autocommit=False) as conn:
        assert await runner.migrate(conn) == LATEST_VERSION
    assert_same_catalog(OFFICIAL, catalog_of(empty_database_url, "dbos"))


async def test_verify_only_refuses_an_unmigrated_database_and_creates_nothing(
    empty_database_url: str,
) -> None:
    async with connected(empty_database_url, autocommit=False) as conn:
        with pytest.raises(DBOSInitializationError) as missing:
            await runner.ensure_schema(conn, run_migrations=False)
    assert "no schema 'dbos'" in str(missing.value)
    assert str(LATEST_VERSION) in str(missing.value)
    assert not schema_exists(empty_database_url, "dbos")

    make_bookkeeping(empty_database_url, "dbos", 108)
    async with connected(empty_database_url, autocommit=False) as conn:
        with pytest.raises(DBOSInitializationError) as behind:
            await runner.verify(conn)
    message = str(behind.value)
    assert "version 108" in message and f"version {LATEST_VERSION}" in message
    assert recorded_versions(empty_database_url, "dbos") == [108]
    tables = sync_query(
        empty_database_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'dbos'"
    )
    assert tables == [("dbos_migrations",)]


async def test_verify_only_accepts_a_migrated_database(empty_database_url: str) -> None:
    async with connected(empty_database_url, autocommit=False) as conn:
        await runner.migrate(conn)
    async with connected(empty_database_url, autocommit=False) as conn:
        assert await runner.ensure_schema(conn, run_migrations=False) == LATEST_VERSION
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


async def test_a_database_ahead_of_us_is_left_alone(
    empty_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    make_bookkeeping(empty_database_url, "dbos", 200)
    caplog.set_level(logging.INFO, logger="dbos_trio.migrate")
    async with connected(empty_database_url, autocommit=False) as conn:
        assert await runner.migrate(conn) == 200
        assert await runner.verify(conn) == 200
    assert recorded_versions(empty_database_url, "dbos") == [200]
    tables = sync_query(
        empty_database_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'dbos'"
    )
    assert tables == [("dbos_migrations",)]
    assert any("ahead" in r.getMessage() for r in caplog.records)


async def test_lock_wait_is_bounded_in_real_time_under_a_mock_clock(
    empty_database_url: str,
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="dbos_trio.migrate")
    with psycopg.connect(empty_database_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (runner.MIGRATION_LOCK_ID,))
        async with connected(empty_database_url, autocommit=False) as conn:
            started = time.monotonic()
            assert await runner.migrate(conn, lock_timeout=0.5) == LATEST_VERSION
            waited = time.monotonic() - started
    assert waited >= 0.5
    assert any("advisory lock" in r.getMessage() for r in caplog.records)
    assert_same_catalog(OFFICIAL, catalog_of(empty_database_url, "dbos"))


# ---------------------------------------------------------------------------- SQL client API


async def test_sql_enqueue_and_send_functions_keep_the_official_contract(
    empty_database_url: str,
) -> None:
    async with connected(empty_database_url, autocommit=False) as conn:
        await runner.migrate(conn)
    with psycopg.connect(empty_database_url, autocommit=True) as c:
        wf = c.execute(
            "SELECT dbos.enqueue_workflow('wf', 'q', ARRAY['1'::json, '\"a\"'::json],"
            " '{\"k\": 2}'::json, workflow_id => 'w1', deduplication_id => 'd',"
            " application_name => 'app')"
        ).fetchone()
        assert wf == ("w1",)
        row = c.execute(
            "SELECT status, name, queue_name, priority, serialization, inputs,"
            " application_name, recovery_attempts, owner_xid IS NOT NULL"
            " FROM dbos.workflow_status WHERE workflow_uuid = 'w1'"
        ).fetchone()
        assert row == ("ENQUEUED", "wf", "q", 0, "portable_json", None, "app", 0, True)
        inputs = c.execute(
            "SELECT inputs FROM dbos.workflow_input WHERE workflow_uuid = 'w1'"
        ).fetchone()
        assert inputs == ('{"positionalArgs" : [1,"a"], "namedArgs" : {"k": 2}}',)
        # The 16-argument form of older callers still resolves; a delay means DELAYED.
        generated = c.execute(
            "SELECT dbos.enqueue_workflow('wf', 'q', ARRAY[]::json[], '{}'::json,"
            " NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 5)"
        ).fetchone()
        assert generated is not None and len(generated[0]) == 36
        assert c.execute(
            "SELECT status, delay_until_epoch_ms FROM dbos.workflow_status"
            " WHERE workflow_uuid = %s",
            (generated[0],),
        ).fetchone() == ("DELAYED", 5)
        # Re-enqueueing the same ID is idempotent.
        assert c.execute("SELECT dbos.enqueue_workflow('wf', 'q', workflow_id => 'w1')").fetchone()
        with pytest.raises(psycopg.errors.UniqueViolation, match="DBOS queue duplicated"):
            c.execute(
                "SELECT dbos.enqueue_workflow('wf', 'q', workflow_id => 'w2',"
                " deduplication_id => 'd')"
            )
        for bad_call, message in [
            ("'', 'q'", "Workflow name cannot be null or empty"),
            ("'wf', ''", "Queue name cannot be null or empty"),
            ("'wf', 'q', named_args => '[1]'::json", "Named args must be a JSON object"),
            ("'wf', 'q', workflow_id => ''", "Workflow ID cannot be an empty string"),
            ("'wf', 'q', delay_until_epoch_ms => -1", "delay_until_epoch_ms must be >= 0"),
        ]:
            with pytest.raises(psycopg.errors.RaiseException, match=message):
                c.execute(f"SELECT dbos.enqueue_workflow({bad_call})")

        c.execute("SELECT dbos.send_message('w1', '{\"a\": 1}'::json)")
        c.execute("SELECT dbos.send_message('w1', '\"m\"'::json, 't', 'mid')")
        c.execute("SELECT dbos.send_message('w1', '\"other\"'::json, 't', 'mid')")
        messages = c.execute(
            "SELECT topic, message, serialization, consumed FROM dbos.notifications ORDER BY topic"
        ).fetchall()
        assert messages == [
            ("__null__topic__", '{"a": 1}', "portable_json", False),
            ("t", '"m"', "portable_json", False),
        ]
        with pytest.raises(psycopg.errors.ForeignKeyViolation, match="DBOS non-existent workflow"):
            c.execute("SELECT dbos.send_message('nobody', '1'::json)")
        # A caller's search_path cannot redirect the functions.
        c.execute("SET search_path = public")
        assert c.execute("SELECT dbos.enqueue_workflow('wf', 'q')").fetchone()
