"""Datasource transactions under contention, lost replies and cancellation mid-query.

The module's ``backend`` decides both databases (system and application), as in
test_transactions.py. Serialization races between transactions of one process only exist
on PostgreSQL: a SQLite datasource runs one transaction at a time.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
import trio

from dbos_trio import DBOS, SetWorkflowID, TransactionConnection, TransactionOutcomeUnknown
from dbos_trio._pg.driver import TrioConnection

from support.app_databases import checkpoints_of, datasource_for
from support.backends import execute, query
from support.dbos_fixtures import reexecute
from support.waiting import wait_until

MakeDBOS = Callable[..., DBOS]

ACCOUNTS, TRANSFERS, OPENING = 10, 50, 1000


async def test_fifty_concurrent_transfers_apply_once_and_preserve_the_total(
    make_dbos: MakeDBOS, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(
        app_database_url, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER)"
    )
    await execute(
        app_database_url,
        "CREATE TABLE transfers (id INTEGER PRIMARY KEY, src INTEGER, dst INTEGER, amount INTEGER)",
    )
    for account in range(ACCOUNTS):
        await execute(app_database_url, "INSERT INTO accounts VALUES (%s, %s)", account, OPENING)
    rng = random.Random(18)
    plan = []
    for transfer_id in range(TRANSFERS):
        src, dst = rng.sample(range(ACCOUNTS), 2)
        plan.append((transfer_id, src, dst, rng.randint(1, 50)))
    attempts: list[int] = []

    @ds.transaction(name="transfer")  # SERIALIZABLE: the datasource's default
    async def transfer(
        conn: TransactionConnection, transfer_id: int, src: int, dst: int, amount: int
    ) -> int:
        attempts.append(transfer_id)
        # Read, yield to the other transfers, then write what was read: without
        # serializable isolation, interleaved transfers would lose updates.
        balance_src = await conn.fetch_value("SELECT balance FROM accounts WHERE id = %s", (src,))
        balance_dst = await conn.fetch_value("SELECT balance FROM accounts WHERE id = %s", (dst,))
        await trio.lowlevel.checkpoint()
        await conn.execute(
            "UPDATE accounts SET balance = %s WHERE id = %s", (balance_src - amount, src)
        )
        await conn.execute(
            "UPDATE accounts SET balance = %s WHERE id = %s", (balance_dst + amount, dst)
        )
        await conn.execute(
            "INSERT INTO transfers VALUES (%s, %s, %s, %s)", (transfer_id, src, dst, amount)
        )
        return int(balance_src - amount)

    @dbos.workflow()
    async def move(transfer_id: int, src: int, dst: int, amount: int) -> int:
        return await transfer(transfer_id, src, dst, amount)

    async with dbos.launched():
        handles: list[Any] = [None] * TRANSFERS

        async def start(index: int) -> None:
            with SetWorkflowID(f"transfer-{index}"):
                handles[index] = await dbos.start_workflow(move, *plan[index])

        async with trio.open_nursery() as nursery:
            for index in range(TRANSFERS):
                nursery.start_soon(start, index)
        for handle in handles:
            assert (await handle.get_status()).status in ("PENDING", "ENQUEUED", "SUCCESS")
            await handle.get_result()
    expected = Counter({account: OPENING for account in range(ACCOUNTS)})
    for _, src, dst, amount in plan:
        expected[src] -= amount
        expected[dst] += amount
    balances = dict(await query(app_database_url, "SELECT id, balance FROM accounts"))
    assert balances == dict(expected)
    assert sum(balances.values()) == ACCOUNTS * OPENING
    applied = await query(
        app_database_url, "SELECT id, src, dst, amount FROM transfers ORDER BY id"
    )
    assert applied == plan  # every transfer exactly once
    # Every retry ran the function again; each transfer committed once.
    assert ds.serialization_retries == len(attempts) - TRANSFERS
    assert sorted(set(attempts)) == list(range(TRANSFERS))
    if not app_database_url.startswith("sqlite"):
        assert ds.serialization_retries > 0
    assert await query(app_database_url, "SELECT count(*) FROM {t}datasource_outputs") == [(0,)]


@pytest.mark.postgres_only("serialization failures between concurrent transactions")
@pytest.mark.parametrize(
    ("isolation", "final", "retries"), [("serializable", 2, 1), ("read committed", 1, 0)]
)
async def test_a_lost_serialization_race_is_retried_and_the_isolation_level_is_the_one_asked(
    make_dbos: MakeDBOS, app_database_url: str, isolation: str, final: int, retries: int
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, "CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER)")
    await execute(app_database_url, "INSERT INTO counters VALUES (1, 0)")
    attempts: list[str] = []
    both_read = trio.Event()

    @ds.transaction(isolation_level=isolation)
    async def increment(conn: TransactionConnection, who: str) -> int:
        attempts.append(who)
        n = int(await conn.fetch_value("SELECT n FROM counters WHERE id = 1"))
        if len(attempts) == 2:
            both_read.set()
        await both_read.wait()  # the two first attempts read before either writes
        await conn.execute("UPDATE counters SET n = %s WHERE id = 1", (n + 1,))
        return n + 1

    async with dbos.launched(), trio.open_nursery() as nursery:
        nursery.start_soon(increment, "a")
        nursery.start_soon(increment, "b")
    # SERIALIZABLE: the second writer fails, runs again and sees the first's write.
    # READ COMMITTED: no failure, and the classic lost update.
    assert (await query(app_database_url, "SELECT n FROM counters")) == [(final,)]
    assert ds.serialization_retries == retries
    assert len(attempts) == 2 + retries


@contextmanager
def commit_replies_lost(times: int = 1) -> Iterator[list[str]]:
    """The next ``times`` COMMITs of transactions that updated ``counters`` reach the server
    and commit; then their connection drops before the reply is read."""
    original = TrioConnection.execute
    marked: set[int] = set()
    lost: list[str] = []

    async def execute(self: TrioConnection, query: Any, params: Any = None, **kwargs: Any) -> Any:
        cursor = await original(self, query, params, **kwargs)
        if isinstance(query, str) and query.startswith("UPDATE counters"):
            marked.add(id(self))
        elif query == "COMMIT" and id(self) in marked and len(lost) < times:
            marked.discard(id(self))
            lost.append("COMMIT")
            self.pgconn.finish()
            raise psycopg.OperationalError("server closed the connection unexpectedly (injected)")
        return cursor

    TrioConnection.execute = execute  # type: ignore[method-assign]
    try:
        yield lost
    finally:
        TrioConnection.execute = original  # type: ignore[method-assign]


@pytest.mark.postgres_only("a COMMIT whose reply is lost (the SQLite datasource is in-process)")
async def test_a_lost_commit_reply_is_retried_in_a_workflow_and_raised_outside_one(
    make_dbos: MakeDBOS, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, "CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER)")
    await execute(app_database_url, "INSERT INTO counters VALUES (1, 0)")
    calls: list[int] = []

    @ds.transaction(name="bump")
    async def bump(conn: TransactionConnection) -> int:
        calls.append(1)
        await conn.execute("UPDATE counters SET n = n + 1 WHERE id = 1")
        return int(await conn.fetch_value("SELECT n FROM counters WHERE id = 1"))

    @dbos.workflow()
    async def workflow() -> int:
        return await bump()

    async with dbos.launched():
        with commit_replies_lost() as lost, SetWorkflowID("wf-lost-commit"):
            # It committed; the retry runs it again, finds its own checkpoint, rolls back.
            assert await workflow() == 1
        assert lost == ["COMMIT"]
        assert (len(calls), ds.connection_retries, ds.replayed) == (2, 1, 1)
        assert await query(app_database_url, "SELECT n FROM counters") == [(1,)]
        with commit_replies_lost() as lost, pytest.raises(TransactionOutcomeUnknown):
            await bump()  # outside a workflow nothing can tell: raised, not retried
        assert lost == ["COMMIT"] and len(calls) == 3
    assert await query(app_database_url, "SELECT n FROM counters") == [(2,)]  # it had committed
    assert await checkpoints_of(app_database_url, "wf-lost-commit") == []


@pytest.mark.postgres_only("a query cancelled on the server")
async def test_a_transaction_cancelled_mid_query_is_cancelled_on_the_server_and_rolled_back(
    make_dbos: MakeDBOS, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url, max_connections=1)
    await execute(app_database_url, "CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER)")

    @ds.transaction()
    async def sleepy(conn: TransactionConnection) -> None:
        await conn.execute("INSERT INTO counters VALUES (1, 1)")
        await conn.execute("SELECT pg_sleep(60)")

    @ds.transaction()
    async def count(conn: TransactionConnection) -> int:
        return int(await conn.fetch_value("SELECT count(*) FROM counters"))

    activity = (
        "SELECT state, query FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
    )
    async with dbos.launched():
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sleepy)

                async def sleeping() -> bool:
                    return any("pg_sleep" in q for _, q in await query(app_database_url, activity))

                await wait_until(sleeping, what="the query running on the server")
                scope.cancel()
        assert scope.cancelled_caught
        # Cancelled on the server and rolled back: the one pooled connection sits idle.
        assert await query(app_database_url, activity) == [("idle", "ROLLBACK")]
        assert await count() == 0  # and it is usable


@pytest.mark.postgres_only("two executions of one transaction interleaving on the server")
async def test_a_lost_race_replays_the_winners_row(
    make_dbos: MakeDBOS, dbos_url: str, app_database_url: str
) -> None:
    dbos = make_dbos()
    ds = datasource_for(dbos, app_database_url)
    await execute(app_database_url, "CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER)")
    await execute(app_database_url, "INSERT INTO counters VALUES (1, 0)")
    calls: list[str] = []

    @ds.transaction(name="bump")
    async def bump(conn: TransactionConnection) -> str:
        calls.append("run")
        n = await conn.fetch_value("UPDATE counters SET n = n + 1 WHERE id = 1 RETURNING n")
        return f"run {len(calls)} made {n}"

    @dbos.workflow()
    async def workflow() -> str:
        return await bump()

    held, release = trio.Event(), trio.Event()
    lock_waiters = (
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    async with dbos.launched():
        sysdb = dbos._require_executor("test").sysdb
        check_owner = sysdb.check_owner
        fenced: list[str] = []

        async def stalling_check_owner(workflow_id: str, owner_xid: str) -> None:
            await check_owner(workflow_id, owner_xid)
            fenced.append(owner_xid)
            if len(fenced) == 1:  # the first execution passed its fence: hold it before COMMIT
                held.set()
                await release.wait()

        sysdb.check_owner = stalling_check_owner  # type: ignore[method-assign]
        with SetWorkflowID("wf-race"):
            first = await dbos.start_workflow(workflow)
        await held.wait()
        results: list[str] = []
        async with trio.open_nursery() as nursery:

            async def take_over() -> None:
                results.append(await reexecute(dbos, dbos_url, workflow, "wf-race"))

            nursery.start_soon(take_over)

            async def blocked() -> bool:
                return (await query(app_database_url, lock_waiters))[0][0] > 0

            # The new owner's transaction waits on the first one's uncommitted row.
            await wait_until(blocked, what="the second execution to wait for the first")
            release.set()  # the first commits; the second finds its row
        assert results == ["run 1 made 1"]
        assert await first.get_result() == "run 1 made 1"
    assert ds.replayed == 1
    assert len(calls) >= 2  # the second ran (and rolled back) at least once
    assert await query(app_database_url, "SELECT n FROM counters") == [(1,)]
    assert await checkpoints_of(app_database_url, "wf-race") == []
