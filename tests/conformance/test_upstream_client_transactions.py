"""Port of the official SDK's ``tests/test_client.py`` in-transaction tests: a client's
enqueues and sends written on the caller's own PostgreSQL transaction, visible only once
it commits. (Upstream passes a SQLAlchemy connection; here a psycopg one.)

PostgreSQL only, on the real clock: the caller's transaction is a second connection."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from dbos_trio import (
    DBOS,
    Client,
    DBOSQueueDeduplicatedError,
    EnqueueOptions,
    SendMessage,
)

from support.backends import query


@pytest.fixture(scope="module")
def backend() -> str:
    """PostgreSQL: the caller's transaction runs on a connection of its own."""
    return "postgres"


@pytest.fixture
def app(dbos: DBOS) -> DBOS:
    dbos.register_queue("test_queue", polling_interval_sec=0.1)

    @dbos.workflow(name="retrieve_test")
    async def retrieve_test(value: str) -> str:
        return value

    @dbos.workflow(name="send_test")
    async def send_test(topic: str | None = None) -> Any:
        return await dbos.recv(topic, 60)

    return dbos


def options(workflow_id: str, **fields: Any) -> EnqueueOptions:
    return EnqueueOptions(
        workflow_name="retrieve_test", queue_name="test_queue", workflow_id=workflow_id, **fields
    )


async def notifications_for(url: str, workflow_id: str) -> int:
    rows = await query(
        url, "SELECT message_uuid FROM {t}notifications WHERE destination_uuid = %s", workflow_id
    )
    return len(rows)


async def test_enqueue_in_transaction_commit(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_enqueue_in_transaction_commit"""
    async with app.launched(), Client(dbos_url) as client:
        with psycopg.connect(dbos_url) as conn:
            handle = await client.enqueue_in_transaction(conn, options("wf"), "tx-commit")
            assert handle.workflow_id == "wf"
            conn.commit()
        assert await handle.get_result() == "tx-commit"
        [row] = await client.list_workflows()
        assert (row.workflow_id, row.status) == ("wf", "SUCCESS")


async def test_enqueue_in_transaction_rollback(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_enqueue_in_transaction_rollback"""
    async with Client(dbos_url) as client:
        with psycopg.connect(dbos_url) as conn:
            await client.enqueue_in_transaction(conn, options("wf"), "tx-rollback")
            conn.rollback()
        assert await client.list_workflows() == []


async def test_enqueue_in_transaction_pre_commit_invisible(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_enqueue_in_transaction_pre_commit_invisible"""
    async with Client(dbos_url) as client:
        with psycopg.connect(dbos_url) as conn:
            await client.enqueue_in_transaction(conn, options("wf"), "tx-invisible")
            assert await client.get_workflow_status("wf") is None  # another connection
            conn.commit()
        assert await client.get_workflow_status("wf") is not None


async def test_enqueue_in_transaction_deduplication(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_enqueue_in_transaction_deduplication"""
    async with Client(dbos_url) as client:
        await client.enqueue(options("holder", deduplication_id="d"), "first")
        with psycopg.connect(dbos_url) as conn:
            with pytest.raises(DBOSQueueDeduplicatedError):
                await client.enqueue_in_transaction(
                    conn, options("second", deduplication_id="d"), "second"
                )
            conn.rollback()
        assert [w.workflow_id for w in await client.list_workflows()] == ["holder"]


async def test_send_in_transaction_commit(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_send_in_transaction_commit"""
    async with app.launched(), Client(dbos_url) as client:
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="send_test", queue_name="test_queue", workflow_id="r"),
            "t",
        )
        with psycopg.connect(dbos_url) as conn:
            await client.send_in_transaction(conn, "r", "hello", "t")
            conn.commit()
        assert await handle.get_result() == "hello"


async def test_send_in_transaction_rollback(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_send_in_transaction_rollback"""
    async with Client(dbos_url) as client:
        await client.enqueue(
            EnqueueOptions(workflow_name="send_test", queue_name="test_queue", workflow_id="r"),
            "t",
        )
        with psycopg.connect(dbos_url) as conn:
            await client.send_in_transaction(conn, "r", "lost", "t")
            conn.rollback()
        assert await notifications_for(dbos_url, "r") == 0


async def test_send_in_transaction_idempotent(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_send_in_transaction_idempotent"""
    async with app.launched(), Client(dbos_url) as client:
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="send_test", queue_name="test_queue", workflow_id="r"),
            "t",
        )
        with psycopg.connect(dbos_url) as conn:
            await client.send_in_transaction(conn, "r", "hello", "t", "key")
            await client.send_in_transaction(conn, "r", "hello", "t", "key")
            rows = conn.execute(
                "SELECT message_uuid FROM dbos.notifications WHERE destination_uuid = 'r'"
            ).fetchall()
            assert len(rows) == 1
            conn.commit()
        assert await handle.get_result() == "hello"


async def test_send_bulk_in_transaction(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_send_bulk_in_transaction"""
    async with app.launched(), Client(dbos_url) as client:
        handles = {}
        for workflow_id in ("a", "b"):
            handles[workflow_id] = await client.enqueue(
                EnqueueOptions(
                    workflow_name="send_test", queue_name="test_queue", workflow_id=workflow_id
                ),
                "t",
            )
        with psycopg.connect(dbos_url) as conn:
            await client.send_bulk_in_transaction(
                conn, [SendMessage("a", "lost-a", "t"), SendMessage("b", "lost-b", "t")]
            )
            conn.rollback()
        assert await notifications_for(dbos_url, "a") == 0
        with psycopg.connect(dbos_url) as conn:
            await client.send_bulk_in_transaction(
                conn, [SendMessage("a", "to_a", "t"), SendMessage("b", "to_b", "t")]
            )
            conn.commit()
        assert await handles["a"].get_result() == "to_a"
        assert await handles["b"].get_result() == "to_b"


async def test_enqueue_and_send_in_transaction(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_enqueue_and_send_in_transaction"""
    async with app.launched(), Client(dbos_url) as client:
        with psycopg.connect(dbos_url) as conn:
            handle = await client.enqueue_in_transaction(
                conn,
                EnqueueOptions(workflow_name="send_test", queue_name="test_queue", workflow_id="r"),
                "t",
            )
            await client.send_in_transaction(conn, "r", "together", "t")
            conn.commit()
        assert await handle.get_result() == "together"


async def test_client_return_existing_rejected_in_transaction(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_duplication_policy.py::test_client_return_existing_rejected_in_transaction"""  # noqa: E501
    from dbos_trio import DBOSException

    async with Client(dbos_url) as client:
        with psycopg.connect(dbos_url) as conn:
            with pytest.raises(DBOSException, match="return-existing"):
                await client.enqueue_in_transaction(
                    conn,
                    options("wf", deduplication_id="d", duplication_policy="return-existing"),
                    "x",
                )
            conn.rollback()
        assert await client.list_workflows() == []


async def test_send_in_transaction_pre_commit_invisible(app: DBOS, dbos_url: str) -> None:
    """upstream: tests/test_client.py::test_send_in_transaction_pre_commit_invisible"""
    async with app.launched(), Client(dbos_url) as client:
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="send_test", queue_name="test_queue", workflow_id="r"),
            "t",
        )
        with psycopg.connect(dbos_url) as conn:
            await client.send_in_transaction(conn, "r", "hello", "t")
            assert await notifications_for(dbos_url, "r") == 0  # another connection
            conn.commit()
        assert await handle.get_result() == "hello"
