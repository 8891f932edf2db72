"""The Trio connection pool: bounded, waiting when exhausted, never handing out a
connection mid-transaction, replacing dead connections without pinging live ones."""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest
import trio
import trio.testing
from psycopg import pq
from psycopg.conninfo import make_conninfo

from dbos_trio._pg import pool as pool_module
from dbos_trio._pg.connecting import connect
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._pg.pool import Pool, PoolClosed

from support.pg_support import fresh_database
from support.scripts.interrupt_query import interrupt
from support.waiting import HANG_GUARD, LONG_QUERY, LONG_QUERY_SECONDS

IDLE = pq.TransactionStatus.IDLE


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    with fresh_database("pool") as url:
        yield url


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@asynccontextmanager
async def opened_pool(url: str, max_size: int) -> AsyncIterator[tuple[Pool, str]]:
    """A pool whose connections carry a unique application_name, so the server can count them."""
    application_name = unique("pool")
    pool = Pool(make_conninfo(url, application_name=application_name), max_size=max_size)
    try:
        yield pool, application_name
    finally:
        await pool.close()


@asynccontextmanager
async def observer(url: str) -> AsyncIterator[TrioConnection]:
    conn = await connect(url, autocommit=True)
    try:
        yield conn
    finally:
        await conn.close()


async def scalar(conn: TrioConnection, query: str, params: Any = None) -> Any:
    cur = await conn.execute(query, params)
    row = await cur.fetchone()
    assert row is not None
    return row[0]


async def server_connections(watcher: TrioConnection, application_name: str) -> int:
    count: int = await scalar(
        watcher,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
        [application_name],
    )
    return count


async def idle_in_transaction(watcher: TrioConnection, application_name: str) -> int:
    count: int = await scalar(
        watcher,
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE application_name = %s AND state LIKE 'idle in transaction%%'",
        [application_name],
    )
    return count


async def until_zero(
    count: Callable[[TrioConnection, str], Awaitable[int]], watcher: TrioConnection, name: str
) -> None:
    """Poll ``count`` until the server reports zero (it notices closed sockets a bit later)."""
    while True:
        if await count(watcher, name) == 0:
            return
        await trio.sleep(0.01)


async def test_fifty_tasks_sharing_a_pool_of_four_all_complete_on_at_most_four_connections(
    database_url: str,
) -> None:
    results: dict[int, int] = {}
    in_use = most_in_use = 0
    most_on_server = 0
    async with opened_pool(database_url, 4) as (pool, name), observer(database_url) as watcher:

        async def work(i: int) -> None:
            nonlocal in_use, most_in_use
            for round_ in range(3):
                async with pool.connection() as conn:
                    in_use += 1
                    most_in_use = max(most_in_use, in_use)
                    value = await scalar(conn, "SELECT %s::int + %s::int", [i, round_])
                    await conn.execute("SELECT pg_sleep(0.002)")
                    in_use -= 1
                assert value == i + round_
            results[i] = value

        async def watch() -> None:
            nonlocal most_on_server
            while True:
                most_on_server = max(most_on_server, await server_connections(watcher, name))
                await trio.sleep(0.005)

        async with trio.open_nursery() as watching:
            watching.start_soon(watch)
            with trio.fail_after(20):
                async with trio.open_nursery() as workers:
                    for i in range(50):
                        workers.start_soon(work, i)
            watching.cancel_scope.cancel()

    assert results == {i: i + 2 for i in range(50)}
    assert most_in_use == 4
    assert 1 <= most_on_server <= 4


async def test_a_checkout_waits_when_the_pool_is_exhausted_and_gets_the_returned_connection(
    database_url: str,
) -> None:
    async with opened_pool(database_url, 1) as (pool, _):
        release = trio.Event()
        got: list[int] = []

        holding = trio.Event()

        async def hold() -> None:
            async with pool.connection() as conn:
                got.append(await scalar(conn, "SELECT pg_backend_pid()"))
                holding.set()
                await release.wait()

        async def wait_for_one() -> None:
            async with pool.connection() as conn:
                got.append(await scalar(conn, "SELECT pg_backend_pid()"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold)
            await holding.wait()
            nursery.start_soon(wait_for_one)
            await trio.sleep(0.1)
            assert len(got) == 1, "the second checkout did not wait"
            release.set()

    assert len(got) == 2
    assert got[0] == got[1], "the waiter should get the connection the holder returned"


async def test_a_cancelled_waiter_does_not_use_up_a_slot(database_url: str) -> None:
    async with opened_pool(database_url, 1) as (pool, _):
        release = trio.Event()
        holding = trio.Event()

        async def hold() -> None:
            async with pool.connection():
                holding.set()
                await release.wait()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold)
            await holding.wait()
            with trio.move_on_after(0.05) as scope:
                async with pool.connection():
                    raise AssertionError("the pool has one connection, and it is taken")
            assert scope.cancelled_caught
            release.set()

        with trio.fail_after(HANG_GUARD):
            async with pool.connection() as conn:
                assert await scalar(conn, "SELECT 1") == 1


async def test_the_next_query_works_after_the_backend_under_an_idle_pooled_connection_is_terminated(
    database_url: str,
) -> None:
    async with opened_pool(database_url, 2) as (pool, _), observer(database_url) as admin:
        async with pool.connection() as conn:
            old_pid = await scalar(conn, "SELECT pg_backend_pid()")
        assert await scalar(admin, "SELECT pg_terminate_backend(%s, 5000)", [old_pid])

        async with pool.connection() as conn:
            assert await scalar(conn, "SELECT 6 * 7") == 42
            new_pid = await scalar(conn, "SELECT pg_backend_pid()")

    assert new_pid != old_pid


async def test_a_connection_that_breaks_during_use_is_replaced_on_the_next_checkout(
    database_url: str,
) -> None:
    async with opened_pool(database_url, 1) as (pool, _):
        with pytest.raises(psycopg.OperationalError):
            async with pool.connection() as conn:
                old_pid = await scalar(conn, "SELECT pg_backend_pid()")
                await conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")

        async with pool.connection() as conn:
            assert await scalar(conn, "SELECT 1") == 1
            assert await scalar(conn, "SELECT pg_backend_pid()") != old_pid


@pytest.mark.parametrize("how", ["open transaction", "failed transaction"])
async def test_a_connection_returned_inside_a_transaction_is_rolled_back_and_reused(
    database_url: str, how: str
) -> None:
    table = unique("returned_in_tx")
    async with opened_pool(database_url, 1) as (pool, name), observer(database_url) as watcher:
        async with pool.connection() as conn:
            await conn.execute(f"CREATE TABLE {table} (v int)")
            pid = await scalar(conn, "SELECT pg_backend_pid()")
        async with pool.connection() as conn:
            await conn.execute("BEGIN")
            await conn.execute(f"INSERT INTO {table} VALUES (1)")
            if how == "failed transaction":
                with pytest.raises(psycopg.errors.DivisionByZero):
                    await conn.execute("SELECT 1 / 0")
            assert conn.info.transaction_status != IDLE

        assert await idle_in_transaction(watcher, name) == 0
        async with pool.connection() as conn:
            assert conn.info.transaction_status == IDLE
            assert await scalar(conn, "SELECT pg_backend_pid()") == pid
            assert await scalar(conn, f"SELECT count(*) FROM {table}") == 0


async def test_cancelling_a_pooled_transaction_rolls_it_back_and_returns_an_idle_connection(
    database_url: str,
) -> None:
    table = unique("cancelled_pooled")
    async with opened_pool(database_url, 1) as (pool, name), observer(database_url) as watcher:
        async with pool.connection() as conn:
            await conn.execute(f"CREATE TABLE {table} (v int)")
            pid = await scalar(conn, "SELECT pg_backend_pid()")

        # Back within the guard from a ten-minute query: the cancellation ended it.
        with trio.fail_after(HANG_GUARD), trio.move_on_after(0.2) as scope:
            async with pool.connection() as conn, conn.transaction():
                await conn.execute(f"INSERT INTO {table} VALUES (1)")
                await conn.execute(LONG_QUERY)
        assert scope.cancelled_caught

        assert await idle_in_transaction(watcher, name) == 0
        assert await scalar(watcher, f"SELECT count(*) FROM {table}") == 0
        # The same connection, handed out within the guard: the pool did not wait for the
        # ten-minute query to end before taking it back.
        with trio.fail_after(HANG_GUARD):
            async with pool.connection() as conn:
                assert await scalar(conn, "SELECT pg_backend_pid()") == pid


async def test_ctrl_c_during_a_pooled_transaction_leaves_no_connection_mid_transaction(
    database_url: str,
) -> None:
    table = unique("interrupted_pool")
    name = unique("sigint_pool")
    report, process, _ = await interrupt(database_url, "pool", application_name=name, table=table)

    # The helper waits HANG_GUARD seconds for the exit, far less than the query would run.
    assert "KeyboardInterrupt" in process.stderr, process.stderr
    assert process.returncode != 0
    assert report["elapsed"] < LONG_QUERY_SECONDS
    assert report["server_state"] == "idle", report
    assert report["idle_in_transaction"] == 0
    assert report["rows"] == 0
    # The pool got its connection back, rolled back and usable.
    assert report["status"] == "IDLE"
    assert report["next_value"] == 42
    async with observer(database_url) as watcher:
        assert await idle_in_transaction(watcher, name) == 0


async def test_close_closes_the_idle_connections(database_url: str) -> None:
    async with opened_pool(database_url, 3) as (pool, name), observer(database_url) as watcher:
        connections: list[TrioConnection] = []
        ready = trio.Event()

        async def borrow() -> None:
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")
                connections.append(conn)
                if len(connections) == 3:
                    ready.set()
                await ready.wait()

        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(borrow)
        assert await server_connections(watcher, name) == 3

        await pool.close()

        assert pool.closed
        assert all(conn.closed for conn in connections)
        with trio.fail_after(HANG_GUARD):
            await until_zero(server_connections, watcher, name)
        with pytest.raises(PoolClosed):
            async with pool.connection():
                pass


async def test_a_connection_checked_out_when_the_pool_closes_is_closed_when_returned(
    database_url: str,
) -> None:
    async with opened_pool(database_url, 2) as (pool, _):
        async with pool.connection() as conn:
            await pool.close()
            assert await scalar(conn, "SELECT 1") == 1
        assert conn.closed


async def test_a_checkout_waiting_when_the_pool_closes_fails_instead_of_connecting(
    database_url: str,
) -> None:
    async with opened_pool(database_url, 1) as (pool, _):
        outcome: list[BaseException | str] = []

        async def wait_for_a_connection() -> None:
            try:
                async with pool.connection():
                    outcome.append("got a connection from a closed pool")
            except PoolClosed as error:
                outcome.append(error)

        holding = trio.Event()
        release = trio.Event()

        async def hold() -> None:
            async with pool.connection():
                holding.set()
                await release.wait()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold)
            await holding.wait()
            nursery.start_soon(wait_for_a_connection)
            await trio.testing.wait_all_tasks_blocked()
            await pool.close()
            # The holder returns its slot; the waiter gets it, on a closed pool.
            release.set()

    assert len(outcome) == 1
    assert isinstance(outcome[0], PoolClosed)


async def test_a_pool_rejects_a_size_below_one() -> None:
    with pytest.raises(ValueError, match="max_size"):
        Pool("postgresql://unused", max_size=0)


async def test_a_connection_whose_rollback_fails_on_return_is_closed_and_frees_its_slot(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with opened_pool(database_url, 1) as (pool, name), observer(database_url) as watcher:
        async with pool.connection() as conn:
            await conn.execute("BEGIN")
            broken = conn

            async def failing_rollback() -> None:
                raise RuntimeError("rollback blew up")

            monkeypatch.setattr(conn, "rollback", failing_rollback)

        assert broken.closed
        with trio.fail_after(HANG_GUARD):
            async with pool.connection() as conn:
                assert conn is not broken
                assert await scalar(conn, "SELECT 1") == 1
        with trio.fail_after(HANG_GUARD):
            await until_zero(idle_in_transaction, watcher, name)


async def test_a_connection_whose_configuration_fails_is_closed_not_leaked(
    database_url: str,
) -> None:
    name = unique("configure")
    configured: list[TrioConnection] = []

    async def configure(conn: TrioConnection) -> None:
        configured.append(conn)
        await conn.execute("SELECT 1")
        raise RuntimeError("configuration failed")

    failing = Pool(
        make_conninfo(database_url, application_name=name), max_size=1, configure=configure
    )
    try:
        with pytest.raises(RuntimeError, match="configuration failed"):
            async with failing.connection():
                raise AssertionError("no connection should be handed out")
    finally:
        await failing.close()

    assert len(configured) == 1 and configured[0].closed
    async with observer(database_url) as watcher:
        with trio.fail_after(HANG_GUARD):
            await until_zero(server_connections, watcher, name)


async def test_configure_runs_on_every_new_connection(database_url: str) -> None:
    async def configure(conn: TrioConnection) -> None:
        await conn.execute("SET application_name = 'configured'")

    configured_pool = Pool(database_url, max_size=2, configure=configure)
    try:
        async with configured_pool.connection() as conn:
            assert await scalar(conn, "SHOW application_name") == "configured"
    finally:
        await configured_pool.close()


async def test_concurrent_pooled_transactions_under_random_deadlines_leave_nothing_mid_transaction(
    database_url: str,
) -> None:
    table = unique("deadlines")
    rng = random.Random(4242)
    committed: set[int] = set()
    cancelled = 0
    unexpected: list[BaseException] = []
    async with opened_pool(database_url, 3) as (pool, name), observer(database_url) as watcher:
        await watcher.execute(f"CREATE TABLE {table} (v int PRIMARY KEY)")

        async def work(worker: int) -> None:
            nonlocal cancelled
            for n in range(25):
                value = worker * 1000 + n
                deadline, sleep = rng.uniform(0, 0.04), rng.uniform(0, 0.003)
                if n % 5 == 0:
                    # Some transactions always finish: on a loaded machine none might
                    # within 40 ms, and the mix of committed and cancelled is the point.
                    deadline = HANG_GUARD
                with trio.move_on_after(deadline) as scope:
                    try:
                        async with pool.connection() as conn, conn.transaction():
                            await conn.execute(f"INSERT INTO {table} VALUES (%s)", [value])
                            await conn.execute("SELECT pg_sleep(%s)", [sleep])
                    except psycopg.Error as error:
                        unexpected.append(error)
                        continue
                if scope.cancelled_caught:
                    cancelled += 1
                else:
                    committed.add(value)

        async with trio.open_nursery() as nursery:
            for worker in range(8):
                nursery.start_soon(work, worker)

        stored = {
            row[0] for row in await (await watcher.execute(f"SELECT v FROM {table}")).fetchall()
        }
        assert unexpected == []
        assert committed and cancelled, (len(committed), cancelled)
        assert committed <= stored, "a transaction that finished was not committed"
        assert await idle_in_transaction(watcher, name) == 0
        assert all(conn.info.transaction_status == IDLE for conn in pool._idle)
        async with pool.connection() as conn:
            assert await scalar(conn, "SELECT 1") == 1


async def test_a_checkout_that_waits_for_a_slot_is_reported_once_a_minute(
    database_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stall (every connection in use, or a session-mode pooler out of server
    # connections) showed only as slow calls: it is now said, with what to change.
    caplog.set_level(logging.WARNING, logger="dbos_trio.pool")
    pool = Pool(database_url, max_size=1)
    held = trio.Event()
    try:
        # The one connection opened first, before waits count as slow: on a loaded machine
        # connecting alone takes longer than the lowered threshold, and its report would
        # take the minute's one report.
        async with pool.connection():
            pass
        monkeypatch.setattr(pool_module, "SLOW_WAIT_SECONDS", 0.05)
        async with trio.open_nursery() as nursery:

            async def hold() -> None:
                async with pool.connection():
                    held.set()
                    await trio.sleep(0.2)

            nursery.start_soon(hold)
            await held.wait()
            for _ in range(2):
                async with pool.connection() as conn:
                    await conn.execute("SELECT 1")
                nursery.start_soon(hold)
                await trio.sleep(0.01)
    finally:
        await pool.close()
    reports = [r.getMessage() for r in caplog.records if "waited" in r.getMessage()]
    assert pool.slow_waits >= 2
    assert len(reports) == 1  # the second wait, within the minute, is counted, not logged
    assert "every one was in use" in reports[0] and "max_connections" in reports[0]
