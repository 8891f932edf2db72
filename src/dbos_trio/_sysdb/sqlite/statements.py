"""The :class:`~dbos_trio._sysdb.statements.StatementRunner` of the SQLite backend.

Invariants, and why:

* A named statement that writes, and every script (several statements under one name),
  runs in one ``BEGIN IMMEDIATE`` transaction: under SQLite's single write lock a
  script's ownership check and the writes it guards see the same state, as the row lock
  of a PostgreSQL CTE does. A single read runs outside any explicit transaction.
* A transaction body (:meth:`SQLiteStatements.transaction`) is a coroutine, but it is
  driven to completion in one go, synchronously: its statements never suspend, so no
  other task's statements can run inside it on the shared connection. A body that tries
  to suspend (awaits anything but its statements) is a bug, refused with an error.
* Lists and tuples in the parameters travel as JSON arrays (``json_each`` unpacks them),
  SQLite's stand-in for PostgreSQL's arrays.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar, cast

from dbos_trio._sysdb.retry import RetryPolicy
from dbos_trio._sysdb.sqlite.connection import Connection, Mode
from dbos_trio._sysdb.statements import Params, Row, Statement, Transaction

T = TypeVar("T")


def adapted_params(params: Params) -> dict[str, Any]:
    """``params`` as SQLite binds them: lists and tuples as JSON arrays."""
    return {
        key: json.dumps(list(value)) if isinstance(value, list | tuple) else value
        for key, value in params.items()
    }


def _last(raw: sqlite3.Connection, statement: Statement, params: Params) -> sqlite3.Cursor:
    """Run every part of ``statement``; the cursor of the last one."""
    adapted = adapted_params(params)
    cursor: sqlite3.Cursor | None = None
    for part in statement.parts:
        cursor = raw.execute(part, adapted)
    assert cursor is not None
    return cursor


class _InTransaction:
    """The statements of one transaction, run synchronously on the raw connection."""

    __slots__ = ("_raw", "_statements")

    def __init__(self, raw: sqlite3.Connection, statements: Mapping[str, Statement]) -> None:
        self._raw = raw
        self._statements = statements

    async def one(self, name: str, params: Params) -> Row | None:
        row: Row | None = _last(self._raw, self._statements[name], params).fetchone()
        return row

    async def all(self, name: str, params: Params) -> list[Row]:
        rows: list[Row] = _last(self._raw, self._statements[name], params).fetchall()
        return rows

    async def run(self, name: str, params: Params) -> int:
        return _last(self._raw, self._statements[name], params).rowcount


def _drive(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a transaction body that never suspends to its end, synchronously."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coroutine.close()
    raise RuntimeError("a SQLite transaction body suspended: it may await only its own statements")


class SQLiteStatements:
    """Named statements on the backend's one connection."""

    def __init__(self, connection: Connection, statements: Mapping[str, Statement]) -> None:
        self._connection = connection
        self._statements = statements
        self.retrier = connection.retrier

    def _mode(self, statement: Statement) -> Mode:
        if statement.writes:
            return "write"
        return "read" if len(statement.parts) > 1 else "none"

    async def one(self, name: str, params: Params) -> Row | None:
        statement = self._statements[name]

        def fetch(raw: sqlite3.Connection) -> Row | None:
            row: Row | None = _last(raw, statement, params).fetchone()
            return row

        return await self._connection.run(fetch, mode=self._mode(statement))

    async def all(self, name: str, params: Params) -> list[Row]:
        statement = self._statements[name]

        def fetch(raw: sqlite3.Connection) -> list[Row]:
            rows: list[Row] = _last(raw, statement, params).fetchall()
            return rows

        return await self._connection.run(fetch, mode=self._mode(statement))

    async def run(self, name: str, params: Params) -> int:
        statement = self._statements[name]

        def execute(raw: sqlite3.Connection) -> int:
            return _last(raw, statement, params).rowcount

        return await self._connection.run(execute, mode=self._mode(statement))

    async def query(self, sql: str, params: Sequence[Any], *, listing: bool = False) -> list[Row]:
        def fetch(raw: sqlite3.Connection) -> list[Row]:
            rows: list[Row] = raw.execute(sql, list(params)).fetchall()
            return rows

        return await self._connection.run(fetch, mode="none")

    async def transaction(
        self,
        body: Callable[[Transaction], Awaitable[T]],
        *,
        policy: RetryPolicy | None = None,
    ) -> T:
        """``body`` in one write transaction (``BEGIN IMMEDIATE``), retried per ``policy``."""
        statements = self._statements

        def run_body(raw: sqlite3.Connection) -> T:
            coroutine = body(_InTransaction(raw, statements))
            assert isinstance(coroutine, Coroutine)
            return _drive(cast("Coroutine[Any, Any, T]", coroutine))

        return await self._connection.run(run_body, mode="write", policy=policy)
