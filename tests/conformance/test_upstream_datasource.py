"""Port of the official SDK's ``tests/test_datasource.py`` (its async half): transactions
on an application datasource, exactly once from workflows, with their names recorded.

dbos_trio's datasources pass the transaction's connection as the first argument (the
official ones hand out ``sql_session()``); the SQLite datasource stands in for
PostgreSQL, the behaviour checked being the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from trio.testing import MockClock

from dbos_trio import DBOS, Datasource, DBOSException, SetWorkflowID, TransactionConnection
from dbos_trio.testing import sqlite_url


@pytest.fixture
def ds(dbos: DBOS, tmp_path: Path) -> Datasource:
    return dbos.sqlite_datasource(sqlite_url(tmp_path / "app.sqlite"))


class StepFailed(Exception):
    pass


async def test_async_ds_bare_run(dbos: DBOS, ds: Datasource, autojump_clock: MockClock) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_bare_run (outside a workflow)"""
    counter = {"n": 0}

    @ds.transaction()
    async def increment(conn: TransactionConnection, amount: int) -> int:
        await conn.execute("SELECT 1")
        counter["n"] += amount
        return counter["n"]

    async with dbos.launched():
        assert await increment(5) == 5
        assert await increment(3) == 8


async def test_async_ds_decorator_with_options(
    dbos: DBOS, ds: Datasource, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_decorator_with_options"""

    @ds.transaction(isolation_level="serializable", name="my_step")
    async def increment(conn: TransactionConnection, amount: int) -> int:
        return amount

    @dbos.workflow()
    async def a_workflow() -> int:
        return await increment(7)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await a_workflow() == 7
        assert [s.function_name for s in await dbos.list_workflow_steps("wf")] == ["my_step"]


async def test_async_ds_transaction_decorator_rejects_sync(dbos: DBOS, ds: Datasource) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_transaction_decorator_rejects_sync"""
    with pytest.raises((DBOSException, TypeError)):

        @ds.transaction()
        def not_async(conn: TransactionConnection) -> int:  # type: ignore[arg-type]
            return 1


async def test_async_ds_oaoo(dbos: DBOS, ds: Datasource, autojump_clock: MockClock) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_oaoo (and _decorator_oaoo)"""
    calls = {"n": 0}

    @ds.transaction()
    async def expensive(conn: TransactionConnection, value: str) -> str:
        calls["n"] += 1
        await conn.execute("SELECT 1")
        return f"async:{value}"

    @dbos.workflow()
    async def a_workflow(value: str) -> str:
        return await expensive(value)

    async with dbos.launched():
        for _ in range(2):
            with SetWorkflowID("wf"):
                assert await a_workflow("hello") == "async:hello"
        assert calls["n"] == 1


async def test_async_ds_error_oaoo(dbos: DBOS, ds: Datasource, autojump_clock: MockClock) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_error_oaoo"""
    calls = {"n": 0}

    @ds.transaction()
    async def failing(conn: TransactionConnection) -> str:
        calls["n"] += 1
        raise StepFailed("async ds step failed")

    @dbos.workflow()
    async def a_workflow() -> str:
        return await failing()

    async with dbos.launched():
        for _ in range(2):
            with SetWorkflowID("wf"), pytest.raises(StepFailed, match="async ds step failed"):
                await a_workflow()
        assert calls["n"] == 1


async def test_async_ds_non_retryable_error_records_and_replays(
    dbos: DBOS, ds: Datasource, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_non_retryable_error_records_and_replays"""
    calls = {"n": 0}

    @ds.transaction()
    async def bad_sql(conn: TransactionConnection) -> None:
        calls["n"] += 1
        await conn.execute("SELECT * FROM no_such_table")

    @dbos.workflow()
    async def a_workflow() -> None:
        await bad_sql()

    async with dbos.launched():
        for _ in range(2):
            with SetWorkflowID("wf"), pytest.raises(Exception, match="no_such_table"):
                await a_workflow()
        assert calls["n"] == 1


async def test_async_ds_multiple_steps_in_workflow(
    dbos: DBOS, ds: Datasource, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_multiple_steps_in_workflow"""

    @ds.transaction()
    async def setup(conn: TransactionConnection) -> None:
        await conn.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT)")

    @ds.transaction()
    async def put(conn: TransactionConnection, key: str, value: str) -> None:
        await conn.execute("INSERT INTO kv VALUES (%s, %s)", (key, value))

    @ds.transaction()
    async def get(conn: TransactionConnection, key: str) -> str:
        rows = await conn.fetch_all("SELECT v FROM kv WHERE k = %s", (key,))
        return str(rows[0][0])

    @dbos.workflow()
    async def a_workflow() -> str:
        await setup()
        await put("a", "1")
        await put("b", "2")
        return await get("a") + await get("b")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await a_workflow() == "12"
        steps = await dbos.list_workflow_steps("wf")
        assert [s.function_id for s in steps] == [1, 2, 3, 4, 5]


async def test_async_ds_step_recorded_with_name(
    dbos: DBOS, ds: Datasource, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_step_recorded_with_name"""

    @ds.transaction()
    async def unnamed_step(conn: TransactionConnection) -> str:
        return "unnamed_result"

    @ds.transaction(name="my_named_async_step")
    async def named_step(conn: TransactionConnection) -> str:
        return "named_result"

    @dbos.workflow()
    async def a_workflow() -> tuple[str, str]:
        return await unnamed_step(), await named_step()

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await a_workflow() == ("unnamed_result", "named_result")
        steps = await dbos.list_workflow_steps("wf")
        assert [s.function_id for s in steps] == [1, 2]
        assert steps[0].function_name.endswith("unnamed_step")
        assert steps[0].output == "unnamed_result"
        assert steps[1].function_name == "my_named_async_step"
        assert steps[1].output == "named_result"


async def test_async_ds_decorator_bare_run(
    dbos: DBOS, ds: Datasource, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_decorator_bare_run"""
    counter = {"n": 0}

    @ds.transaction()
    async def increment(conn: TransactionConnection, amount: int) -> int:
        await conn.execute("SELECT 1")
        counter["n"] += amount
        return counter["n"]

    async with dbos.launched():
        assert await increment(10) == 10
        assert await increment(5) == 15
        assert await dbos.list_workflows() == []  # outside a workflow: nothing recorded


async def test_async_ds_decorator_oaoo(
    dbos: DBOS, ds: Datasource, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_decorator_oaoo"""
    calls = {"n": 0}

    @ds.transaction()
    async def decorated_step(conn: TransactionConnection, value: str) -> str:
        calls["n"] += 1
        return f"decorated:{value}"

    @dbos.workflow()
    async def my_workflow(value: str) -> str:
        return await decorated_step(value)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await my_workflow("world") == "decorated:world"
        assert calls["n"] == 1
        with SetWorkflowID("wf"):
            assert await my_workflow("world") == "decorated:world"
        assert calls["n"] == 1


async def test_async_ds_retries_on_serialization_error(
    dbos: DBOS, ds: Datasource, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_datasource.py::test_async_ds_retries_on_serialization_error

    The SQLite datasource's counterpart of PostgreSQL's serialization failure (SQLSTATE
    40001) is a busy database: raised in the body, the transaction is retried, not
    recorded as the step's error."""
    import sqlite3

    calls = {"n": 0}
    max_retries = 3

    def busy() -> sqlite3.OperationalError:
        error = sqlite3.OperationalError("database is locked")
        error.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
        return error

    @ds.transaction()
    async def flaky(conn: TransactionConnection) -> str:
        calls["n"] += 1
        if calls["n"] <= max_retries:
            raise busy()
        return "success"

    @dbos.workflow()
    async def my_workflow() -> str:
        return await flaky()

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await my_workflow() == "success"
        assert calls["n"] == max_retries + 1
        assert ds.serialization_retries == max_retries
        [step] = await dbos.list_workflow_steps("wf")
        assert (step.output, step.error) == ("success", None)
        with SetWorkflowID("wf"):
            assert await my_workflow() == "success"
        assert calls["n"] == max_retries + 1
