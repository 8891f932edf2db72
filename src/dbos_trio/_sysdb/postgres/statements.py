"""The :class:`~dbos_trio._sysdb.statements.StatementRunner` of the PostgreSQL backend.

Invariants, and why:

* One round trip per call on the hot path: a named statement runs on an autocommit pooled
  connection as a prepared statement, so a step checkpoint costs one commit and nothing
  else — not a BEGIN, a statement and a COMMIT. The three single-statement shapes are
  written out rather than built on a shared closure: they run once per checkpoint.
* A call made in an already cancelled scope raises ``Cancelled`` before anything is sent,
  as on SQLite; one cancelled while its statement runs either committed or rolled back.
* Errors are mapped here (:func:`.errors.map_error`, scrubbed of the URL's secrets and
  chained to nothing that holds them) and retried by the backend's
  :class:`~dbos_trio._sysdb.retry.Retrier`, each attempt on a freshly checked-out
  connection (the pool discards one that broke); a statement that goes through tells the
  retrier, which ends an outage if one was on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
import trio

from dbos_trio._pg.driver import TrioConnection
from dbos_trio._pg.pool import Pool
from dbos_trio._sysdb.postgres.errors import map_error
from dbos_trio._sysdb.retry import Attempts, Retrier, RetryPolicy
from dbos_trio._sysdb.statements import Params, Row, Statement, Transaction

T = TypeVar("T")

_DRIVER_ERRORS = (psycopg.Error, UnicodeError)


class _InTransaction:
    """The statements of one transaction, on its connection."""

    __slots__ = ("_conn", "_sql")

    def __init__(self, conn: TrioConnection, sql: Mapping[str, str]) -> None:
        self._conn = conn
        self._sql = sql

    async def one(self, name: str, params: Params) -> Row | None:
        rows, _count = await self._conn.fetch(self._sql[name], params)
        return rows[0] if rows else None

    async def all(self, name: str, params: Params) -> list[Row]:
        rows, _count = await self._conn.fetch(self._sql[name], params)
        return rows

    async def run(self, name: str, params: Params) -> int:
        _rows, count = await self._conn.fetch(self._sql[name], params)
        return count

    async def execute(self, sql: str) -> None:
        """An unnamed statement without parameters (``SET``, advisory locks)."""
        await self._conn.execute(sql)


class PostgresStatements:
    """Named statements on a pool, each call its own autocommit transaction."""

    def __init__(
        self,
        pool: Pool,
        statements: Mapping[str, Statement],
        retrier: Retrier,
        *,
        query_timeout_ms: int | None = None,
    ) -> None:
        self._pool = pool
        # statement_timeout of the ad hoc listing queries (:meth:`query`); None: the server's.
        self._query_timeout_ms = query_timeout_ms
        self._sql = {name: statement.text for name, statement in statements.items()}
        self.retrier = retrier

    def sql(self, name: str) -> str:
        return self._sql[name]

    async def one(self, name: str, params: Params) -> Row | None:
        query = self._sql[name]
        # A call made in a cancelled scope sends nothing (the fast path would send the
        # statement before its first checkpoint, where the Cancelled would come too late).
        await trio.lowlevel.checkpoint_if_cancelled()
        attempts: Attempts | None = None
        while True:
            try:
                async with self._pool.connection() as conn:
                    rows, _count = await conn.fetch(query, params)
            except _DRIVER_ERRORS as error:
                failure = map_error(error, self._pool.scrub)
            else:
                if self.retrier.outage is not None:
                    self.retrier.succeeded()
                return rows[0] if rows else None
            # Paused (and raised) outside the except block: the driver's error, which may
            # quote a secret of the URL, must not become the mapped error's __context__.
            attempts = await self.retrier.pause(failure, attempts)

    async def all(
        self, name: str, params: Params, *, policy: RetryPolicy | None = None
    ) -> list[Row]:
        query = self._sql[name]
        # A call made in a cancelled scope sends nothing (the fast path would send the
        # statement before its first checkpoint, where the Cancelled would come too late).
        await trio.lowlevel.checkpoint_if_cancelled()
        attempts: Attempts | None = None
        while True:
            try:
                async with self._pool.connection() as conn:
                    rows, _count = await conn.fetch(query, params)
            except _DRIVER_ERRORS as error:
                failure = map_error(error, self._pool.scrub)
            else:
                if self.retrier.outage is not None:
                    self.retrier.succeeded()
                return rows
            # Paused (and raised) outside the except block: the driver's error, which may
            # quote a secret of the URL, must not become the mapped error's __context__.
            attempts = await self.retrier.pause(failure, attempts, policy)

    async def run(self, name: str, params: Params) -> int:
        query = self._sql[name]
        # A call made in a cancelled scope sends nothing (the fast path would send the
        # statement before its first checkpoint, where the Cancelled would come too late).
        await trio.lowlevel.checkpoint_if_cancelled()
        attempts: Attempts | None = None
        while True:
            try:
                async with self._pool.connection() as conn:
                    _rows, count = await conn.fetch(query, params)
            except _DRIVER_ERRORS as error:
                failure = map_error(error, self._pool.scrub)
            else:
                if self.retrier.outage is not None:
                    self.retrier.succeeded()
                return count
            # Paused (and raised) outside the except block: the driver's error, which may
            # quote a secret of the URL, must not become the mapped error's __context__.
            attempts = await self.retrier.pause(failure, attempts)

    async def query(self, sql: str, params: Sequence[Any], *, listing: bool = False) -> list[Row]:
        timeout_ms = self._query_timeout_ms if listing else None
        await trio.lowlevel.checkpoint_if_cancelled()
        attempts: Attempts | None = None
        while True:
            try:
                async with self._pool.connection() as conn:
                    if timeout_ms is None:
                        cur = await conn.execute(sql, list(params), prepare=False)
                        found: list[Row] = await cur.fetchall()
                    else:
                        # SET LOCAL: the limit ends with this transaction, so the pooled
                        # connection's hot-path statements never carry it. A timeout leaves
                        # the transaction open; the pool rolls it back on return.
                        await conn.execute("BEGIN")
                        await conn.execute(f"SET LOCAL statement_timeout = {int(timeout_ms)}")
                        cur = await conn.execute(sql, list(params), prepare=False)
                        found = await cur.fetchall()
                        await conn.execute("COMMIT")
            except _DRIVER_ERRORS as error:
                failure = map_error(error, self._pool.scrub)
            else:
                if self.retrier.outage is not None:
                    self.retrier.succeeded()
                return found
            # Paused (and raised) outside the except block: the driver's error, which may
            # quote a secret of the URL, must not become the mapped error's __context__.
            attempts = await self.retrier.pause(failure, attempts)

    async def transaction(
        self,
        body: Callable[[Transaction], Awaitable[T]],
        *,
        isolation: str | None = None,
        policy: RetryPolicy | None = None,
        generic_plans: bool = False,
    ) -> T:
        """``body`` in one transaction (``isolation``: e.g. ``"REPEATABLE READ"``); the whole
        transaction is retried per ``policy`` (the backend's by default). ``generic_plans``
        makes its prepared statements use their generic plan (``plan_cache_mode``, set in
        the BEGIN's round trip): for a statement whose custom plans cost more to make than
        to run."""
        begin = "BEGIN" if isolation is None else f"BEGIN ISOLATION LEVEL {isolation}"
        if generic_plans:
            begin += "; SET LOCAL plan_cache_mode = force_generic_plan"
        await trio.lowlevel.checkpoint_if_cancelled()
        attempts: Attempts | None = None
        while True:
            try:
                async with self._pool.connection() as conn:
                    result = await _run_transaction(conn, begin, body, self._sql)
            except _DRIVER_ERRORS as error:
                failure = map_error(error, self._pool.scrub)
            else:
                if self.retrier.outage is not None:
                    self.retrier.succeeded()
                return result
            # Paused (and raised) outside the except block: the driver's error, which may
            # quote a secret of the URL, must not become the mapped error's __context__.
            attempts = await self.retrier.pause(failure, attempts, policy)


async def _run_transaction(
    conn: TrioConnection,
    begin: str,
    body: Callable[[Transaction], Awaitable[T]],
    sql: Mapping[str, str],
) -> T:
    # Explicit BEGIN/COMMIT on the autocommit connection (psycopg's transaction block
    # would cost the same, plus its own bookkeeping); a failure or a cancellation leaves
    # the transaction open, and the pool rolls it back (shielded) when the connection
    # comes back.
    await conn.execute(begin)
    result = await body(_InTransaction(conn, sql))
    await conn.execute("COMMIT")
    return result
