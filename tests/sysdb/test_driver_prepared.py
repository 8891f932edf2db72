"""The driver's fast path for prepared statements with named parameters.

``TrioConnection.execute(query, {...}, prepare=True)`` bypasses psycopg's generic machinery;
these tests pin that it still behaves like psycopg: same values both ways, statements
prepared once per connection and parameter types, prepared again after psycopg (or the
user) deallocated them, errors as psycopg raises them, and cancellation leaving the
connection usable.
"""

from __future__ import annotations

import types
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import trio
from psycopg import pq

from dbos_trio._pg.driver import TrioConnection

from support.backends import connected
from support.pg_support import fresh_database

IDLE = pq.TransactionStatus.IDLE

QUERY = (
    "SELECT %(text)s::text, %(big)s::bigint, %(small)s::int, %(none)s::text, %(flag)s::bool, "
    "%(names)s::text[], %(text)s::text || '!'"
)


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    with fresh_database("driver_prepared") as url:
        yield url


async def prepared_names(conn: TrioConnection) -> list[str]:
    cur = await conn.execute("SELECT name FROM pg_prepared_statements ORDER BY name")
    return [row[0] for row in await cur.fetchall()]


def params(**changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "text": "héllo",
        "big": 12345678901,
        "small": 3,
        "none": None,
        "flag": True,
        "names": ["a", "b"],
    }
    values.update(changes)
    return values


async def test_a_prepared_statement_returns_what_psycopg_returns(database_url: str) -> None:
    async with connected(database_url) as conn:
        fast = await (await conn.execute(QUERY, params(), prepare=True)).fetchall()
        plain = await (await conn.execute(QUERY, params(), prepare=False)).fetchall()
        assert fast == plain == [("héllo", 12345678901, 3, None, True, ["a", "b"], "héllo!")]
        cur = await conn.execute(
            "SELECT g FROM generate_series(1, %(n)s) AS g", {"n": 3}, prepare=True
        )
        assert cur.rowcount == 3
        assert [c.name for c in cur.description or []] == ["g"]
        assert await cur.fetchone() == (1,)
        assert await cur.fetchall() == [(2,), (3,)]


async def test_a_statement_is_prepared_once_per_connection_and_parameter_types(
    database_url: str,
) -> None:
    async with connected(database_url) as conn:
        for _ in range(5):
            await conn.execute(QUERY, params(), prepare=True)
        assert len([n for n in await prepared_names(conn) if n.startswith("_dt_")]) == 1
        # A different parameter type (an int that needs 8 bytes) is another statement.
        await conn.execute("SELECT %(x)s::bigint", {"x": 1}, prepare=True)
        await conn.execute("SELECT %(x)s::bigint", {"x": 2**40}, prepare=True)
        assert len([n for n in await prepared_names(conn) if n.startswith("_dt_")]) == 3


async def test_prepared_statements_survive_a_rollback(database_url: str) -> None:
    async with connected(database_url) as conn:
        await conn.execute(QUERY, params(), prepare=True)
        before = await prepared_names(conn)
        async with conn.transaction(force_rollback=True):
            await conn.execute(QUERY, params(), prepare=True)
        await conn.execute("BEGIN")
        await conn.execute("ROLLBACK")
        row = await (await conn.execute(QUERY, params(), prepare=True)).fetchone()
        assert row is not None and row[0] == "héllo"
        assert await prepared_names(conn) == before


async def test_statements_deallocated_by_hand_are_prepared_again(database_url: str) -> None:
    async with connected(database_url) as conn:
        for command in ("DEALLOCATE ALL", "DISCARD ALL"):
            await conn.execute(QUERY, params(), prepare=True)
            await conn.execute(command)
            row = await (await conn.execute(QUERY, params(), prepare=True)).fetchone()
            assert row is not None and row[1] == 12345678901


async def test_a_statement_the_server_lost_is_prepared_again(database_url: str) -> None:
    async with connected(database_url) as conn:
        await conn.execute(QUERY, params(), prepare=True)

        def lose_them() -> None:
            # As if deallocated where neither psycopg nor the driver could see it.
            for key in conn._fast_names:
                conn._fast_names[key] = b"_dt_gone"

        # Outside a transaction block, nothing ran: the driver prepares and runs it again.
        lose_them()
        row = await (await conn.execute(QUERY, params(), prepare=True)).fetchone()
        assert row is not None and row[1] == 12345678901
        # Inside one, the transaction is aborted: the error is the caller's.
        lose_them()
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            async with conn.transaction():
                await conn.execute(QUERY, params(), prepare=True)
        row = await (await conn.execute(QUERY, params(), prepare=True)).fetchone()
        assert row is not None and row[1] == 12345678901


async def test_a_missing_parameter_and_a_server_error_raise_like_psycopg(
    database_url: str,
) -> None:
    async with connected(database_url) as conn:
        with pytest.raises(psycopg.ProgrammingError):
            await conn.execute("SELECT %(a)s::int, %(b)s::int", {"a": 1}, prepare=True)
        with pytest.raises(psycopg.errors.DivisionByZero):
            await conn.execute("SELECT 1 / %(zero)s::int", {"zero": 0}, prepare=True)
        with pytest.raises(psycopg.errors.UndefinedTable):
            await conn.execute(
                "SELECT * FROM no_such_table WHERE a = %(a)s", {"a": 1}, prepare=True
            )
        assert conn.pgconn.transaction_status == IDLE
        row = await (await conn.execute("SELECT %(a)s::int", {"a": 7}, prepare=True)).fetchone()
        assert row == (7,)


async def test_inside_a_transaction_block_the_statement_joins_the_transaction(
    database_url: str,
) -> None:
    table = f"t_{uuid.uuid4().hex[:10]}"
    async with connected(database_url) as conn:
        await conn.execute(f"CREATE TABLE {table} (v int)")
        async with conn.transaction(force_rollback=True):
            await conn.execute(f"INSERT INTO {table} VALUES (%(v)s)", {"v": 1}, prepare=True)
            cur = await conn.execute(
                f"SELECT count(*) FROM {table} WHERE v >= %(v)s", {"v": 0}, prepare=True
            )
            assert await cur.fetchone() == (1,)
        cur = await conn.execute(
            f"SELECT count(*) FROM {table} WHERE v >= %(v)s", {"v": 0}, prepare=True
        )
        assert await cur.fetchone() == (0,)


async def test_a_cancelled_prepared_statement_leaves_the_connection_usable(
    database_url: str,
) -> None:
    async with connected(database_url) as conn:
        with trio.move_on_after(0.2) as scope:
            await conn.execute("SELECT pg_sleep(%(s)s)", {"s": 5.0}, prepare=True)
        assert scope.cancelled_caught
        assert conn.pgconn.transaction_status == IDLE
        row = await (await conn.execute("SELECT %(a)s::int", {"a": 1}, prepare=True)).fetchone()
        assert row == (1,)


async def test_fetch_reads_the_rows_and_count_execute_would_without_a_cursor(
    database_url: str,
) -> None:
    table = f"t_{uuid.uuid4().hex[:10]}"
    async with connected(database_url) as conn:
        await conn.execute(f"CREATE TABLE {table} (v int)")
        plain = await (await conn.execute(QUERY, params(), prepare=False)).fetchall()
        assert await conn.fetch(QUERY, params()) == (plain, 1)
        series = "SELECT g FROM generate_series(1, %(n)s) AS g"
        assert await conn.fetch(series, {"n": 3}) == ([(1,), (2,), (3,)], 3)
        assert await conn.fetch(series, {"n": 0}) == ([], 0)
        # A command: no rows, the count of rows it touched; with RETURNING, both.
        insert = f"INSERT INTO {table} SELECT generate_series(1, %(n)s)"
        assert await conn.fetch(insert, {"n": 4}) == ([], 4)
        update = f"UPDATE {table} SET v = v + %(d)s WHERE v > %(min)s RETURNING v"
        assert await conn.fetch(update, {"d": 10, "min": 2}) == ([(13,), (14,)], 2)
        # What the fast path does not take (no parameters, a non-ASCII query, a mapping
        # that is not a dict) goes through execute, with the same result.
        count = f"SELECT count(*) FROM {table}"
        assert await conn.fetch(count, {}) == ([(4,)], 1)
        assert await conn.fetch("SELECT %(t)s::text || 'é'", {"t": "x"}) == ([("xé",)], 1)
        frozen = types.MappingProxyType({"n": 2})
        assert await conn.fetch(series, frozen) == ([(1,), (2,)], 2)
        assert conn._fast_loader is not None and conn._fast_loader.pgresult is None


async def test_fetch_raises_like_psycopg_and_a_cancelled_fetch_leaves_the_connection_usable(
    database_url: str,
) -> None:
    async with connected(database_url) as conn:
        with pytest.raises(psycopg.ProgrammingError):
            await conn.fetch("SELECT %(a)s::int, %(b)s::int", {"a": 1})
        with pytest.raises(psycopg.errors.DivisionByZero):
            await conn.fetch("SELECT 1 / %(zero)s::int", {"zero": 0})
        assert conn.pgconn.transaction_status == IDLE
        with trio.move_on_after(0.2) as scope:
            await conn.fetch("SELECT pg_sleep(%(s)s)", {"s": 5.0})
        assert scope.cancelled_caught
        assert conn.pgconn.transaction_status == IDLE
        assert await conn.fetch("SELECT %(a)s::int", {"a": 1}) == ([(1,)], 1)
