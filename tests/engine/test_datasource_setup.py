"""Datasources at launch: their tables and version, verification, sharing a database.

The module's ``backend`` decides both the system and the application database.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from dbos_trio import DBOS, DBOSInitializationError, SetWorkflowID, TransactionConnection
from dbos_trio._datasource.migrate import migration_lock_key

from support.app_databases import checkpoints_of, datasource_for
from support.backends import execute, query, steps_of
from support.waiting import wait_until

MakeDBOS = Callable[..., DBOS]

# The official SDK 3.4's datasource_outputs, column by column.
POSTGRES_COLUMNS = [
    ("workflow_id", "text", "NO"),
    ("step_id", "integer", "NO"),
    ("output", "text", "YES"),
    ("error", "text", "YES"),
    ("serialization", "text", "YES"),
    ("created_at", "bigint", "NO"),
]


@pytest.mark.postgres_only("schemas")
async def test_launch_creates_the_official_tables_in_the_datasource_schema(
    make_dbos: MakeDBOS, app_database_url: str
) -> None:
    dbos = make_dbos()
    datasource_for(dbos, app_database_url, schema="App Checkpoints")
    async with dbos.launched():
        pass
    columns = await query(
        app_database_url,
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_schema = 'App Checkpoints' AND table_name = 'datasource_outputs' "
        "ORDER BY ordinal_position",
    )
    assert columns == POSTGRES_COLUMNS
    key = await query(
        app_database_url,
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = "
        "'\"App Checkpoints\".datasource_outputs'::regclass AND i.indisprimary ORDER BY a.attnum",
    )
    assert key == [("workflow_id",), ("step_id",)]
    assert await query(
        app_database_url, 'SELECT version FROM "App Checkpoints".dbos_datasource_migrations'
    ) == [(1,)]
    # The lock key both SDKs take (the value the official 3.4 package computes).
    assert migration_lock_key("dbos") == -539682970964697559


async def test_sqlite_gets_the_official_unqualified_tables(
    make_dbos: MakeDBOS, app_database_url: str
) -> None:
    dbos = make_dbos()
    datasource_for(dbos, app_database_url)
    async with dbos.launched():
        pass
    if app_database_url.startswith("sqlite"):
        names = await query(
            app_database_url, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        )
        assert names == [("datasource_outputs",), ("dbos_datasource_migrations",)]
    assert await query(app_database_url, "SELECT version FROM {t}dbos_datasource_migrations") == [
        (1,)
    ]


async def test_verifying_an_unmigrated_database_fails_the_launch_and_creates_nothing(
    make_dbos: MakeDBOS, app_database_url: str
) -> None:
    dbos = make_dbos()
    datasource_for(dbos, app_database_url, run_migrations=False)
    with pytest.raises(DBOSInitializationError, match="run_migrations"):
        async with dbos.launched():
            pass
    if app_database_url.startswith("sqlite"):
        tables = await query(app_database_url, "SELECT name FROM sqlite_master")
    else:
        tables = await query(
            app_database_url, "SELECT nspname FROM pg_namespace WHERE nspname = 'dbos'"
        )
    assert tables == []
    # Once migrated (by a launch that may), verification passes.
    migrating = make_dbos()
    datasource_for(migrating, app_database_url)
    async with migrating.launched():
        pass
    async with dbos.launched():
        pass


async def test_concurrent_launches_migrate_once(make_dbos: MakeDBOS, app_database_url: str) -> None:
    apps = [make_dbos(executor_id=f"e{i}") for i in range(3)]
    for app in apps:
        datasource_for(app, app_database_url)

    async def launch(app: DBOS) -> None:
        async with app.launched():
            pass

    async with trio.open_nursery() as nursery:
        for app in apps:
            nursery.start_soon(launch, app)
    assert await query(app_database_url, "SELECT version FROM {t}dbos_datasource_migrations") == [
        (1,)
    ]


async def test_a_datasource_may_share_the_system_database(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, dbos_url)  # the same database (and schema, on PostgreSQL)
    await execute(dbos_url, "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
    gate = trio.Event()

    @ds.transaction()
    async def place(conn: TransactionConnection, order_id: int, item: str) -> str:
        await conn.execute("INSERT INTO orders VALUES (%s, %s)", (order_id, item))
        return item

    @dbos.workflow()
    async def order(order_id: int, item: str) -> str:
        placed = await place(order_id, item)
        await gate.wait()
        return placed

    async with dbos.launched():
        with SetWorkflowID("shared-1"):
            handle = await dbos.start_workflow(order, 1, "tea")
        await wait_until(lambda: steps_of(dbos_url, "shared-1"), what="the step row")
        assert [row[0] for row in await checkpoints_of(dbos_url, "shared-1")] == [1]
        gate.set()
        assert await handle.get_result() == "tea"
        # Relaunching the same instance opens the datasource again.
    async with dbos.launched():
        assert await place(2, "cake") == "cake"
    assert await query(dbos_url, "SELECT id, item FROM orders ORDER BY id") == [
        (1, "tea"),
        (2, "cake"),
    ]
    assert await checkpoints_of(dbos_url, "shared-1") == []
