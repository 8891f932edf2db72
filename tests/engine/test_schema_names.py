"""A schema name is an identifier, quoted once and templated in a single pass.

Names holding what a template engine or a driver might read as syntax — ``{`` and ``}``
(our statements' placeholders), ``%`` (psycopg's parameters), quotes, ``$$`` (the
migrations' function bodies) — address exactly the schema they name: a whole application
(migration, workflows, steps, a partitioned queue, messages, events, streams, a Client)
runs in it, and a neighbouring application in schema ``dbos`` of the same database,
with a workflow of the same name queued on a queue of the same name, is never touched.

PostgreSQL only: the embedded SQLite backend has no schemas.
"""

from __future__ import annotations

import pytest

from dbos_trio import DBOS, Config, DBOSConfigError, SetEnqueueOptions, SetWorkflowID
from dbos_trio._client import Client

from support.backends import migrate_postgres, query

pytestmark = pytest.mark.postgres_only_module("SQLite has no schemas")

NAMES = ["dbos{partition}", "x{lock}", "50%off%s", "we\"ird'{schema}$$", "}{now_ms}{"]


def table_of(schema: str, table: str) -> str:
    """``schema.table`` as :func:`query` takes it: quoted, its braces and ``%`` escaped."""
    quoted = '"' + schema.replace('"', '""') + '"'
    return f"{quoted}.{table}".replace("{", "{{").replace("}", "}}").replace("%", "%%")


@pytest.mark.parametrize("schema", NAMES)
async def test_an_application_runs_whole_in_a_schema_named_with_template_syntax(
    empty_database_url: str, schema: str
) -> None:
    url = empty_database_url
    # The neighbour: schema dbos, a queued workflow our app could mistake for its own.
    await migrate_postgres(url)
    await query(
        url,
        "INSERT INTO dbos.workflow_status (workflow_uuid, status, name, queue_name, "
        "created_at, updated_at, application_version, recovery_attempts, inputs) "
        "VALUES ('neighbour', 'ENQUEUED', 'greet', 'jobs', 1, 1, 'v1', 0, NULL)",
    )
    neighbour_before = await query(url, "SELECT * FROM dbos.workflow_status")

    dbos = DBOS(Config(app_name="odd", database_url=url, schema=schema, app_version="v1"))
    jobs = dbos.register_queue("jobs", partition_concurrency=1, polling_interval_sec=0.05)

    @dbos.step()
    async def double(n: int) -> int:
        return 2 * n

    @dbos.workflow(name="greet")
    async def greet(n: int) -> int:
        await dbos.set_event("seen", n)
        await dbos.write_stream("out", n)
        await dbos.close_stream("out")
        message = await dbos.recv("go", timeout_seconds=30)
        return await double(n) + message

    async with dbos.launched():
        with SetWorkflowID("direct"):
            handle = await dbos.start_workflow(greet, 1)
        await dbos.send("direct", 10, topic="go")
        assert await handle.get_result() == 12
        assert await dbos.get_event("direct", "seen") == 1
        assert [v async for v in dbos.read_stream("direct", "out")] == [1]

        with SetEnqueueOptions(queue_partition_key="p{1}%"), SetWorkflowID("queued"):
            queued = await jobs.enqueue(greet, 2)
        await dbos.send("queued", 20, topic="go")
        assert await queued.get_result() == 24

        async with Client(url, schema=schema, app_name="odd") as client:
            assert {s.workflow_id for s in await client.list_workflows()} == {"direct", "queued"}
            await client.send("direct", "late", topic="unread")
            assert await client.get_event("queued", "seen", timeout_seconds=0) == 2

    statuses = table_of(schema, "workflow_status")
    rows = await query(url, f"SELECT workflow_uuid, status FROM {statuses} ORDER BY 1")
    assert rows == [("direct", "SUCCESS"), ("queued", "SUCCESS")]
    steps = await query(url, f"SELECT count(*) FROM {table_of(schema, 'operation_outputs')}")
    assert steps[0][0] > 0
    assert await query(url, "SELECT * FROM dbos.workflow_status") == neighbour_before
    assert await query(url, "SELECT count(*) FROM dbos.operation_outputs") == [(0,)]


def test_a_schema_that_is_not_an_identifier_is_refused_before_connecting() -> None:
    for bad in ("", "a\x00b", "x" * 64, "é" * 32):
        with pytest.raises(DBOSConfigError, match=r"Config\.schema"):
            Config(app_name="odd", database_url="postgresql://nobody@127.0.0.1:1/x", schema=bad)
