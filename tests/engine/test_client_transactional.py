"""``Client.enqueue_in_transaction`` and ``send_in_transaction``: rows written on the
caller's own connection commit or roll back with the caller's transaction.

On a real PostgreSQL (the in-transaction calls need a second connection to the same
database, which SQLite cannot share a transaction with: refused there, tested below).
Three kinds of caller connection: a blocking ``psycopg.Connection``, dbos_trio's own
``TrioConnection``, and the ``TransactionConnection`` of a ``@ds.transaction`` function.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    Config,
    DBOSException,
    DBOSNonExistentWorkflowError,
    DBOSQueueDeduplicatedError,
    EnqueueOptions,
    SetWorkflowID,
)
from dbos_trio._pg.connecting import connect
from dbos_trio.testing import sqlite_url

from support.backends import query

QUEUE = "tx_q"


def options(workflow_id: str, **more: object) -> EnqueueOptions:
    return EnqueueOptions(workflow_name="double", queue_name=QUEUE, workflow_id=workflow_id, **more)  # type: ignore[arg-type]


async def ids(url: str) -> set[str]:
    return {row[0] for row in await query(url, "SELECT workflow_uuid FROM {t}workflow_status")}


@pytest.mark.postgres_only("a caller's transaction on a second connection")
async def test_an_enqueue_in_a_blocking_transaction_commits_or_rolls_back_with_it(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    async with Client(dbos_url, app_name="wf-tests") as client:
        with psycopg.connect(dbos_url) as conn:  # not autocommit: a transaction is open
            await client.enqueue_in_transaction(conn, options("rolled-back"), 1)
            conn.rollback()
            handle = await client.enqueue_in_transaction(
                conn, options("committed", attributes={"tenant": "t1"}), 21
            )
            # Not visible before the caller commits.
            assert "committed" not in await ids(dbos_url)
            conn.commit()
        assert await ids(dbos_url) == {"committed"}
        # The row is Client.enqueue's, attributes included (one builder for both).
        [tagged] = await client.list_workflows(attributes={"tenant": "t1"})
        assert tagged.workflow_id == "committed"
        dbos = make_dbos()
        dbos.register_queue(QUEUE)

        @dbos.workflow(name="double")
        async def double(n: int) -> int:
            return 2 * n

        async with dbos.launched():
            with trio.fail_after(30):
                assert await handle.get_result() == 42


@pytest.mark.postgres_only("a caller's transaction on a second connection")
async def test_a_send_in_an_async_transaction_is_delivered_once_the_caller_commits(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def receiver() -> object:
        return await dbos.recv("orders", timeout_seconds=30)

    async with dbos.launched(), Client(dbos_url) as client:
        with SetWorkflowID("receiver"):
            handle = await dbos.start_workflow(receiver)
        conn = await connect(dbos_url, autocommit=False)
        try:
            await client.send_in_transaction(conn, "receiver", "lost", "orders")
            await conn.rollback()
            await client.send_in_transaction(conn, "receiver", "kept", "orders", "key-1")
            await client.send_in_transaction(conn, "receiver", "kept", "orders", "key-1")
            await conn.commit()
            with pytest.raises(DBOSNonExistentWorkflowError):
                await client.send_in_transaction(conn, "nobody", "x", "orders")
            await conn.rollback()  # the failed statement aborted the caller's transaction
        finally:
            await conn.close()
        with trio.fail_after(30):
            assert await handle.get_result() == "kept"
    [(count,)] = await query(
        dbos_url, "SELECT count(*) FROM {t}notifications WHERE destination_uuid = 'receiver'"
    )
    assert count == 1  # the idempotency key left one message; the rolled-back one is gone


@pytest.mark.postgres_only("a caller's transaction on a second connection")
async def test_an_enqueue_inside_a_datasource_transaction_commits_with_its_rows(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()
    ds = dbos.postgres_datasource(dbos_url)

    async with Client(dbos_url, app_name="wf-tests") as client:

        @ds.transaction()
        async def place_order(conn: object, fail: bool) -> None:
            await conn.execute("CREATE TABLE IF NOT EXISTS orders (id text)")  # type: ignore[attr-defined]
            await conn.execute("INSERT INTO orders VALUES ('o-1')")  # type: ignore[attr-defined]
            await client.enqueue_in_transaction(conn, options("with-order"), 1)
            if fail:
                raise ValueError("the order failed")

        @dbos.workflow()
        async def checkout(fail: bool) -> None:
            await place_order(fail)

        async with dbos.launched():
            with pytest.raises(ValueError):
                await checkout(True)
            assert "with-order" not in await ids(dbos_url)
            await checkout(False)
        assert "with-order" in await ids(dbos_url)
        assert await query(dbos_url, "SELECT id FROM orders") == [("o-1",)]


@pytest.mark.postgres_only("a caller's transaction on a second connection")
async def test_a_held_deduplication_id_raises_and_return_existing_is_refused(
    dbos_url: str,
) -> None:
    async with Client(dbos_url) as client:
        with psycopg.connect(dbos_url) as conn:
            await client.enqueue_in_transaction(conn, options("first", deduplication_id="d"), 1)
            conn.commit()
            with pytest.raises(DBOSQueueDeduplicatedError):
                await client.enqueue_in_transaction(
                    conn, options("second", deduplication_id="d"), 1
                )
            conn.rollback()
            with pytest.raises(DBOSException, match="return-existing"):
                await client.enqueue_in_transaction(
                    conn,
                    options("third", deduplication_id="d", duplication_policy="return-existing"),
                    1,
                )
    assert await ids(dbos_url) == {"first"}


async def test_a_client_on_sqlite_refuses_in_transaction_calls(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "tx.sqlite")
    dbos = DBOS(Config(app_name="tx-sqlite", database_url=url))
    async with dbos.launched():
        pass
    async with Client(url) as client:
        with pytest.raises(DBOSException, match="PostgreSQL"):
            await client.enqueue_in_transaction(object(), options("x"), 1)
        with pytest.raises(DBOSException, match="PostgreSQL"):
            await client.send_in_transaction(object(), "x", "m")
