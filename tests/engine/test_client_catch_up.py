"""What the ``Client`` gained to match the official ``DBOSClient`` 3.4: ``send_bulk`` (and
``send_to_forks``), ``send_bulk_in_transaction``, ``read_stream_offset``, ``list_queues``,
``delete_queue`` and ``check_connection``.

Each test runs on both backends unless it needs PostgreSQL (a caller's transaction on a
second connection; a TCP outage). Rows are read back on the test's own connection
(:func:`support.backends.query`), never through the client under test.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    DBOSException,
    DBOSInvalidArgumentError,
    DBOSNonExistentWorkflowError,
    DBOSStreamTimeoutError,
    EnqueueOptions,
    SendMessage,
    SetWorkflowID,
)
from dbos_trio._sysdb.errors import SystemDatabaseUnreachable

from support.backends import execute, query
from support.outage_proxy import outage_proxy

APP = "wf-tests"
UNSERVED = "nobody_serves_this"


async def inbox_rows(url: str, destination: str) -> list[tuple[str, str]]:
    rows = await query(
        url,
        "SELECT topic, message FROM {t}notifications WHERE destination_uuid = %s "
        "ORDER BY created_at_epoch_ms, message",
        destination,
    )
    return [(row[0], row[1]) for row in rows]


def waiting(workflow_id: str) -> EnqueueOptions:
    return EnqueueOptions(workflow_name="inbox", queue_name=UNSERVED, workflow_id=workflow_id)


async def test_a_client_bulk_send_delivers_every_message_or_none(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def inbox(count: int) -> list[str]:
        return [await dbos.recv("t", timeout_seconds=30) for _ in range(count)]

    async with dbos.launched(), Client(dbos_url, app_name=APP) as client:
        with SetWorkflowID("box-a"):
            a = await dbos.start_workflow(inbox, 2)
        with SetWorkflowID("box-b"):
            b = await dbos.start_workflow(inbox, 1)
        # A missing destination: nothing of the batch is sent.
        with pytest.raises(DBOSNonExistentWorkflowError):
            await client.send_bulk(
                [
                    SendMessage(destination_id="box-a", message="lost", topic="t"),
                    SendMessage(destination_id="nobody", message="x", topic="t"),
                ]
            )
        # The same key twice for one destination is refused at the call.
        with pytest.raises(DBOSInvalidArgumentError):
            client.send_bulk(
                [
                    SendMessage(destination_id="box-a", message=1, idempotency_key="k"),
                    SendMessage(destination_id="box-a", message=2, idempotency_key="k"),
                ]
            )
        await client.send_bulk(
            [
                SendMessage(destination_id="box-a", message="one", topic="t"),
                SendMessage(destination_id="box-b", message="two", topic="t"),
                SendMessage(destination_id="box-a", message="three", topic="t"),
            ]
        )
        with trio.fail_after(30):
            assert await a.get_result() == ["one", "three"]
            assert await b.get_result() == ["two"]
    # A client records no step in anybody's workflow.
    assert await query(
        dbos_url, "SELECT count(*) FROM {t}operation_outputs WHERE function_name = 'DBOS.send_bulk'"
    ) == [(0,)]


async def test_a_client_send_to_forks_reaches_the_destination_and_every_fork(
    dbos_url: str,
) -> None:
    async with Client(dbos_url, app_name=APP) as client:
        await client.enqueue(waiting("root"))
        fork = await client.fork_workflow("root", 1, queue_name=UNSERVED)
        grandchild = await client.fork_workflow(fork.workflow_id, 1, queue_name=UNSERVED)
        await client.enqueue(waiting("bystander"))
        await client.send_bulk(
            [SendMessage(destination_id="root", message="all", topic="t", idempotency_key="k")],
            serialization="portable",
            send_to_forks=True,
        )
        await client.send("root", "only root", "u", serialization="portable")
    for destination in ("root", fork.workflow_id, grandchild.workflow_id):
        expected = [("t", '"all"')] + ([("u", '"only root"')] if destination == "root" else [])
        assert sorted(await inbox_rows(dbos_url, destination)) == sorted(expected)
    assert await inbox_rows(dbos_url, "bystander") == []


@pytest.mark.postgres_only("a caller's transaction on a second connection")
async def test_a_bulk_send_in_a_transaction_is_delivered_once_the_caller_commits(
    dbos_url: str,
) -> None:
    async with Client(dbos_url, app_name=APP) as client:
        await client.enqueue(waiting("box"))
        fork = await client.fork_workflow("box", 1, queue_name=UNSERVED)
        batch = [
            SendMessage(destination_id="box", message="a", topic="t"),
            SendMessage(destination_id="box", message="b", topic="t", idempotency_key="k"),
        ]
        with psycopg.connect(dbos_url) as conn:
            await client.send_bulk_in_transaction(conn, batch, serialization="portable")
            conn.rollback()
            assert await inbox_rows(dbos_url, "box") == []
            await client.send_bulk_in_transaction(
                conn, batch, serialization="portable", send_to_forks=True
            )
            # Not visible before the caller commits.
            assert await inbox_rows(dbos_url, "box") == []
            conn.commit()
            # A retried batch adds only the message without a key.
            await client.send_bulk_in_transaction(conn, batch[1:], serialization="portable")
            conn.commit()
        assert sorted(await inbox_rows(dbos_url, "box")) == [("t", '"a"'), ("t", '"b"')]
        assert sorted(await inbox_rows(dbos_url, fork.workflow_id)) == [
            ("t", '"a"'),
            ("t", '"b"'),
        ]
        # A missing destination aborts the caller's transaction, and sends nothing.
        with psycopg.connect(dbos_url) as conn:
            with pytest.raises(DBOSNonExistentWorkflowError):
                await client.send_bulk_in_transaction(
                    conn,
                    [
                        SendMessage(destination_id="box", message="c", topic="t"),
                        SendMessage(destination_id="nobody", message="d"),
                    ],
                )
            conn.rollback()
    assert len(await inbox_rows(dbos_url, "box")) == 2


async def test_a_bulk_send_in_a_transaction_is_refused_on_sqlite(dbos_url: str) -> None:
    if not dbos_url.startswith("sqlite"):
        pytest.skip("SQLite's refusal")
    async with Client(dbos_url) as client:
        with pytest.raises(DBOSException, match="PostgreSQL"):
            await client.send_bulk_in_transaction(
                object(), [SendMessage(destination_id="x", message=1)]
            )


async def test_a_client_reads_one_stream_value_by_offset(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def writer() -> None:
        for value in ("a", "b", "c"):
            await dbos.write_stream("s", value)
        await dbos.close_stream("s")

    async with dbos.launched(), Client(dbos_url, app_name=APP) as client:
        with SetWorkflowID("writer"):
            await writer()
        with trio.fail_after(30):
            assert await client.read_stream_offset("writer", "s", 0) == "a"
            assert await client.read_stream_offset("writer", "s", 2) == "c"
            # Past the close: the stream ended before that offset.
            with pytest.raises(DBOSStreamTimeoutError):
                await client.read_stream_offset("writer", "s", 3)
            with pytest.raises(DBOSNonExistentWorkflowError):
                await client.read_stream_offset("nobody", "s", 0)
        with pytest.raises(DBOSInvalidArgumentError):
            client.read_stream_offset("writer", "s", -1)
    assert await query(
        dbos_url, "SELECT count(*) FROM {t}operation_outputs WHERE workflow_uuid = 'writer'"
    ) == [(4,)]  # the writer's own steps; the client's reads recorded nothing


async def test_a_client_lists_and_deletes_stored_queues(dbos_url: str) -> None:
    async with Client(dbos_url, app_name="app-a") as client:
        await client.register_queue("q_mine", worker_concurrency=2)
        await client.register_queue("q_theirs", application_name="app-b")
        await client.register_queue("q_shared", application_name=None)
        await execute(
            dbos_url, "UPDATE {t}queues SET application_name = NULL WHERE name = %s", "q_shared"
        )
        mine = await client.list_queues()
        assert [q.name for q in mine] == ["q_mine", "q_shared"]
        assert mine[0].config.worker_concurrency == 2
        both = await client.list_queues(application_name=["app-a", "app-b"])
        assert [q.name for q in both] == ["q_mine", "q_shared", "q_theirs"]
        assert [q.name for q in await client.list_queues(application_name="app-b")] == [
            "q_shared",
            "q_theirs",
        ]
        # What list_queues answers has the setters of the stored row.
        await mine[0].set_worker_concurrency(5)
        stored = await client.retrieve_queue("q_mine")
        assert stored is not None and stored.config.worker_concurrency == 5
        await client.delete_queue("q_mine")
        await client.delete_queue("q_mine")  # a missing queue is not an error
        assert await client.retrieve_queue("q_mine") is None
        assert [q.name for q in await client.list_queues()] == ["q_shared"]
        with pytest.raises(DBOSInvalidArgumentError):
            await client.delete_queue("")
    async with Client(dbos_url) as everyone:
        assert [q.name for q in await everyone.list_queues()] == ["q_shared", "q_theirs"]


async def test_check_connection_answers_while_the_database_is_reachable(dbos_url: str) -> None:
    client = Client(dbos_url)
    with pytest.raises(DBOSException, match="not open"):
        await client.check_connection()
    async with client:
        await client.check_connection()


def through(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))


@pytest.mark.postgres_only("a TCP outage between the client and PostgreSQL")
async def test_check_connection_raises_unreachable_once_the_database_is_cut_off(
    dbos_url: str,
) -> None:
    port = urlsplit(dbos_url).port or 5432
    async with outage_proxy(port) as proxy:
        proxied = through(dbos_url, proxy.port)
        async with Client(proxied, use_listen_notify=False, connect_timeout=2) as client:
            await client.check_connection()
            proxy.cut()
            with trio.fail_after(20):
                with pytest.raises(SystemDatabaseUnreachable):
                    await client.check_connection()
            proxy.restore()
            with trio.fail_after(30):
                await client.check_connection()
