"""Datasource transactions: exactly once from workflows, plain elsewhere, on both backends.

Each test runs twice: a PostgreSQL system database with a PostgreSQL datasource, and a
SQLite system database with a SQLite datasource (the module's ``backend``).
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import (
    DBOS,
    DBOSAwaitedWorkflowCancelledError,
    DBOSException,
    DBOSInvalidArgumentError,
    DBOSNotLaunchedError,
    SetWorkflowID,
    TransactionConnection,
)

from support.app_databases import checkpoints_of, datasource_for
from support.backends import execute, query, status_row, steps_of
from support.dbos_fixtures import reexecute
from support.waiting import wait_until

MakeDBOS = Callable[..., DBOS]

COUNTERS = "CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"


class Refused(Exception):
    pass


async def counter(url: str, counter_id: int = 1) -> int | None:
    rows = await query(url, "SELECT n FROM counters WHERE id = %s", counter_id)
    return None if not rows else int(rows[0][0])


async def test_a_transaction_in_a_workflow_commits_once_with_a_step_row_named_as_it(
    make_dbos: MakeDBOS, dbos_url: str, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, COUNTERS)
    calls: list[int] = []

    @ds.transaction(name="add_counter")
    async def add_counter(conn: TransactionConnection, counter_id: int, start: int) -> int:
        calls.append(counter_id)
        await conn.execute(
            "INSERT INTO counters (id, n) VALUES (%(id)s, %(n)s)", {"id": counter_id, "n": start}
        )
        value = await conn.fetch_value("SELECT n FROM counters WHERE id = %s", (counter_id,))
        assert dbos.workflow_id == "wf-1" and dbos.step_id == 1  # inside: like a step
        return int(value)

    @dbos.workflow()
    async def workflow() -> int:
        return await add_counter(7, 41) + 1

    async with dbos.launched():
        with SetWorkflowID("wf-1"):
            assert await workflow() == 42
        # Replayed from its step row: not run again.
        assert await reexecute(dbos, dbos_url, workflow, "wf-1") == 42
    assert calls == [7]
    assert await counter(app_database_url, 7) == 41
    steps = await steps_of(dbos_url, "wf-1", "function_id, function_name, output, serialization")
    assert steps == [(1, "add_counter", base64.b64encode(pickle.dumps(41)).decode(), "py_pickle")]
    # Dropped when the workflow finished: the step row covers the transaction.
    assert await checkpoints_of(app_database_url, "wf-1") == []
    assert ds.replayed == 0


async def test_outside_workflows_and_inside_steps_a_transaction_is_a_plain_transaction(
    make_dbos: MakeDBOS, dbos_url: str, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, COUNTERS)

    @ds.transaction()
    async def bump(conn: TransactionConnection, counter_id: int) -> int:
        await conn.execute(
            "INSERT INTO counters (id, n) VALUES (%s, 1) "
            "ON CONFLICT (id) DO UPDATE SET n = counters.n + 1",
            (counter_id,),
        )
        return int(await conn.fetch_value("SELECT n FROM counters WHERE id = %s", (counter_id,)))

    @dbos.step()
    async def async_step() -> int:
        return await bump(2)

    @dbos.step()
    def thread_step() -> int:
        value: int = bump(3)  # from a worker thread: runs on the Trio thread, returns the value
        return value

    @dbos.workflow()
    async def workflow() -> list[int]:
        return [await async_step(), await thread_step()]

    with pytest.raises(DBOSNotLaunchedError):
        await bump(1)
    async with dbos.launched():
        assert await bump(1) == 1
        assert await bump(1) == 2
        with SetWorkflowID("wf-steps"):
            assert await workflow() == [1, 1]
    assert await counter(app_database_url, 1) == 2
    assert await checkpoints_of(app_database_url, "wf-steps") == []
    names = [s[1] for s in await steps_of(dbos_url, "wf-steps")]
    assert names == [async_step.__qualname__, thread_step.__qualname__]


async def test_a_failed_transaction_rolls_back_records_its_error_and_replays_it(
    make_dbos: MakeDBOS, dbos_url: str, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, COUNTERS)
    calls: list[str] = []
    release = trio.Event()

    @ds.transaction(name="refuse")
    async def refuse(conn: TransactionConnection, why: str) -> None:
        calls.append(why)
        await conn.execute("INSERT INTO counters (id, n) VALUES (1, 1)")
        raise Refused(why)

    @dbos.workflow()
    async def workflow() -> str:
        try:
            await refuse("no funds")
        except Refused as error:
            await release.wait()
            return f"refused: {error}"
        return "accepted"

    async with dbos.launched():
        with SetWorkflowID("wf-fail"):
            handle = await dbos.start_workflow(workflow)
        await wait_until(lambda: steps_of(dbos_url, "wf-fail"), what="the step row")
        # Recorded as the official SDK records it: the pickled exception, no output.
        ((step_id, output, error, serialization),) = await checkpoints_of(
            app_database_url, "wf-fail"
        )
        assert (step_id, output, serialization) == (1, None, "py_pickle")
        recorded = pickle.loads(base64.b64decode(error))
        assert isinstance(recorded, Refused) and recorded.args == ("no funds",)
        release.set()
        assert await handle.get_result() == "refused: no funds"
        assert await reexecute(dbos, dbos_url, workflow, "wf-fail") == "refused: no funds"
    assert calls == ["no funds"]
    assert await counter(app_database_url) is None  # rolled back
    ((name, step_error),) = await steps_of(dbos_url, "wf-fail", "function_name, error")
    assert name == "refuse" and isinstance(pickle.loads(base64.b64decode(step_error)), Refused)


async def test_a_committed_transaction_whose_step_row_is_missing_is_replayed_not_rerun(
    make_dbos: MakeDBOS, dbos_url: str, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, COUNTERS)
    calls: list[int] = []
    hold = trio.Event()

    @ds.transaction(name="once")
    async def once(conn: TransactionConnection) -> str:
        calls.append(1)
        await conn.execute("INSERT INTO counters (id, n) VALUES (1, %s)", (len(calls),))
        return f"run {len(calls)}"

    @dbos.workflow()
    async def workflow() -> str:
        value = await once()
        await hold.wait()
        return value

    async with dbos.launched():
        with SetWorkflowID("wf-lost-row"):
            handle = await dbos.start_workflow(workflow)
        await wait_until(lambda: steps_of(dbos_url, "wf-lost-row"), what="the step row")
        # As if the process had died between the commit and its step row: another
        # execution takes over, with the transaction committed and no step row.
        await execute(
            dbos_url, "DELETE FROM {t}operation_outputs WHERE workflow_uuid = %s", "wf-lost-row"
        )
        results: list[str] = []
        async with trio.open_nursery() as nursery:

            async def take_over() -> None:
                results.append(await reexecute(dbos, dbos_url, workflow, "wf-lost-row"))

            nursery.start_soon(take_over)
            await wait_until(lambda: steps_of(dbos_url, "wf-lost-row"), what="the replay")
            hold.set()
        assert results == ["run 1"]
        assert await handle.get_result() == "run 1"
    assert calls == [1]
    assert ds.replayed == 1
    assert await counter(app_database_url) == 1
    assert [s[1] for s in await steps_of(dbos_url, "wf-lost-row")] == ["once"]


async def test_a_stale_execution_inside_its_transaction_commits_nothing(
    make_dbos: MakeDBOS, dbos_url: str, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, "CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER)")
    await execute(app_database_url, "INSERT INTO counters (id, n) VALUES (1, 0)")
    entered, release = trio.Event(), trio.Event()
    calls: list[int] = []

    @ds.transaction(name="bump")
    async def bump(conn: TransactionConnection) -> int:
        calls.append(1)
        n = int(await conn.fetch_value("SELECT n FROM counters WHERE id = 1"))
        if len(calls) == 1:  # the first execution stalls, holding its transaction open
            entered.set()
            await release.wait()
        await conn.execute("UPDATE counters SET n = %s WHERE id = 1", (n + 1,))
        return n + 1

    @dbos.workflow()
    async def workflow() -> int:
        return await bump()

    async with dbos.launched():
        with SetWorkflowID("wf-stale"):
            stale = await dbos.start_workflow(workflow)
        await entered.wait()
        first_owner = (await status_row(dbos_url, "wf-stale"))["owner_xid"]

        async def taken_over() -> bool:
            return (await status_row(dbos_url, "wf-stale"))["owner_xid"] != first_owner

        async with trio.open_nursery() as nursery:
            results: list[int] = []

            async def take_over() -> None:
                # Another execution takes the workflow over (as recovery elsewhere would).
                results.append(await reexecute(dbos, dbos_url, workflow, "wf-stale"))

            nursery.start_soon(take_over)
            await wait_until(taken_over, what="the takeover")
            if not app_database_url.startswith("sqlite"):
                # On PostgreSQL the new owner runs its transaction to the end meanwhile (the
                # SQLite datasource has one writer: it waits for the stale one to end).
                await wait_until(lambda: results, what="the new owner's result")
            release.set()
        assert results == [1]
        assert await stale.get_result() == 1  # its handle adopts the new owner's outcome
    assert await counter(app_database_url) == 1
    assert await checkpoints_of(app_database_url, "wf-stale") == []


async def test_a_cancelled_workflow_rolls_its_transaction_back_and_records_nothing(
    make_dbos: MakeDBOS, dbos_url: str, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, COUNTERS)
    entered = trio.Event()
    calls: list[int] = []

    @ds.transaction(name="slow")
    async def slow(conn: TransactionConnection) -> int:
        calls.append(1)
        await conn.execute("INSERT INTO counters (id, n) VALUES (1, 1)")
        if len(calls) == 1:
            entered.set()
            await trio.sleep_forever()
        return 1

    @dbos.workflow()
    async def workflow() -> int:
        return await slow()

    async with dbos.launched():
        with SetWorkflowID("wf-cancel"):
            handle = await dbos.start_workflow(workflow)
        await entered.wait()
        await dbos.cancel_workflow("wf-cancel")
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()  # returns once the execution has unwound
        assert (await handle.get_status()).status == "CANCELLED"
        assert await counter(app_database_url) is None
        assert await checkpoints_of(app_database_url, "wf-cancel") == []
        assert await steps_of(dbos_url, "wf-cancel") == []
        if not app_database_url.startswith("sqlite"):
            idle_in_transaction = await query(
                app_database_url,
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND state LIKE 'idle in transaction%%'",
            )
            assert idle_in_transaction == [(0,)]
        resumed = await dbos.resume_workflow("wf-cancel")
        assert await resumed.get_result() == 1
    assert calls == [1, 1]
    assert await counter(app_database_url) == 1


async def test_a_function_that_commits_by_itself_is_refused(
    make_dbos: MakeDBOS, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, COUNTERS)

    @ds.transaction()
    async def rogue(conn: TransactionConnection) -> None:
        await conn.execute("INSERT INTO counters (id, n) VALUES (1, 1)")
        await conn.execute("COMMIT")

    @ds.transaction()
    async def sneaky(conn: TransactionConnection) -> None:
        await conn.execute("INSERT INTO counters (id, n) VALUES (2, 1); COMMIT; BEGIN")

    @dbos.workflow()
    async def rogue_workflow() -> None:
        await sneaky()

    @ds.transaction  # the bare form works too
    async def leaky(conn: TransactionConnection) -> TransactionConnection:
        return conn

    async with dbos.launched():
        # Refused before the statement is sent: the insert before it is rolled back with
        # the transaction, and nothing commits apart from a checkpoint.
        with pytest.raises(DBOSInvalidArgumentError, match="COMMIT inside a @transaction"):
            await rogue()
        refused = pytest.raises(DBOSInvalidArgumentError, match="COMMIT inside a @transaction")
        with SetWorkflowID("rogue-1"), refused:
            await rogue_workflow()
        assert await query(app_database_url, "SELECT id FROM counters") == []
        assert (await status_row(dbos.config.database_url or "", "rogue-1"))["status"] == "ERROR"
        kept = await leaky()
        with pytest.raises(DBOSException, match="transaction is over"):
            await kept.execute("SELECT 1")


async def test_the_connection_api_is_the_same_on_both_backends(
    make_dbos: MakeDBOS, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")

    @ds.transaction(isolation_level="read committed")
    async def fill(conn: TransactionConnection) -> dict[str, Any]:
        many = await conn.execute_many(
            "INSERT INTO notes (id, body) VALUES (%s, %s)", [(1, "a"), (2, "b%"), (3, "c")]
        )
        named = await conn.execute(
            "UPDATE notes SET body = %(body)s WHERE id = %(id)s", {"id": 3, "body": "z"}
        )
        return {
            "dialect": conn.dialect,
            "many": many,
            "named": named,
            "all": await conn.fetch_all("SELECT id, body FROM notes ORDER BY id"),
            "one": await conn.fetch_one("SELECT body FROM notes WHERE body LIKE 'b%%'", ()),
            "none": await conn.fetch_one("SELECT body FROM notes WHERE id = %s", (9,)),
            "value": await conn.fetch_value("SELECT count(*) FROM notes"),
        }

    async with dbos.launched():
        got = await fill()
    assert got["dialect"] == ("sqlite" if app_database_url.startswith("sqlite") else "postgresql")
    assert (got["many"], got["named"]) == (3, 1)
    assert got["all"] == [(1, "a"), (2, "b%"), (3, "z")]
    assert (got["one"], got["none"], got["value"]) == (("b%",), None, 3)


async def test_bad_arguments_are_refused_before_anything_connects(
    make_dbos: MakeDBOS, app_database_url: str
) -> None:
    dbos = make_dbos()
    with pytest.raises(DBOSInvalidArgumentError, match="url"):
        dbos.postgres_datasource("mysql://nowhere")
    with pytest.raises(DBOSInvalidArgumentError, match="url"):
        dbos.sqlite_datasource("sqlite:///")
    with pytest.raises(DBOSInvalidArgumentError, match="isolation_level"):
        dbos.postgres_datasource("postgresql://x/y", isolation_level="chaos")
    with pytest.raises(DBOSInvalidArgumentError, match="max_connections"):
        dbos.postgres_datasource("postgresql://x/y", max_connections=0)
    with pytest.raises(DBOSInvalidArgumentError, match="schema"):
        dbos.postgres_datasource("postgresql://x/y", schema="s" * 64)
    ds = datasource_for(dbos, app_database_url)
    with pytest.raises(DBOSInvalidArgumentError, match="isolation_level"):
        ds.transaction(isolation_level="sometimes")
    with pytest.raises(TypeError, match="async def"):
        ds.transaction(lambda conn: None)  # type: ignore[arg-type]
    async with dbos.launched():
        with pytest.raises(DBOSException, match="register before launch"):
            datasource_for(dbos, app_database_url)
