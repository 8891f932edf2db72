"""A PostgreSQL datasource on our Trio-native psycopg driver and pool.

Invariants, and why:

* One attempt is one transaction on one pooled autocommit connection: an explicit
  ``BEGIN ISOLATION LEVEL ...``, the function's statements, then — from a workflow — the
  checkpoint insert and the ownership fence, then ``COMMIT``. An exception or a Trio
  cancellation anywhere leaves the transaction open, and the pool rolls it back (shielded,
  under a real-time limit) as the connection comes back; a query cancelled mid-flight is
  cancelled on the server first, and a connection whose state is unknown is closed, never
  reused. So a cancelled transaction never commits, and records nothing.
* ``COMMIT`` is the one ambiguous moment: a connection that fails while it is in flight
  may have committed. That is :class:`~.protocol.TransactionOutcomeUnknown`, never a plain
  connection error that a caller would take for "rolled back".
* A function that ends the transaction itself (``COMMIT``/``ROLLBACK`` through
  :attr:`driver`) is refused before the checkpoint is written: its writes could no longer
  commit together with it.
* After :meth:`close`, every call raises :class:`~dbos_trio._sysdb.errors.DatabaseClosed`
  (control for the engine: shutdown is not a transaction's outcome).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import psycopg
from psycopg import pq

from dbos_trio._datasource import migrate
from dbos_trio._datasource.control import refusal
from dbos_trio._datasource.protocol import (
    OUTPUTS_TABLE,
    CheckpointTarget,
    FailureKind,
    IsolationLevel,
    Params,
    RecordedOutput,
    Row,
    StepAlreadyRecorded,
    TransactionConnection,
    TransactionOutcomeUnknown,
    ended_by_body,
)
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._pg.pool import Pool, PoolClosed
from dbos_trio._pg.scrubbing import scrubbed
from dbos_trio._redact import Scrubber, redact_url
from dbos_trio._sysdb.errors import ConnectionLost, DatabaseClosed
from dbos_trio._sysdb.migrations import quote_identifier
from dbos_trio._sysdb.postgres.errors import map_error
from dbos_trio._sysdb.statements import load_templates, render, to_psycopg
from dbos_trio.errors import DBOSException, DBOSInitializationError, DBOSInvalidArgumentError

T = TypeVar("T")

# Serialization failure, deadlock detected: the transaction was rolled back, run it again
# (the official SDK retries exactly these).
SERIALIZATION_FAILURES = frozenset({"40001", "40P01"})
_IDLE = pq.TransactionStatus.IDLE


def _statements(schema: str) -> dict[str, str]:
    # psycopg reads "%" as a placeholder, so the schema's own are doubled.
    table = f"{quote_identifier(schema)}.{OUTPUTS_TABLE}".replace("%", "%%")
    return {
        name: render(to_psycopg(template), {"outputs": table}, name=name)
        for name, template in load_templates(__package__ or "dbos_trio._datasource").items()
    }


class PostgresTransactionConnection:
    """:class:`~.protocol.TransactionConnection` on one ``TrioConnection``."""

    __slots__ = ("_conn", "_open")

    def __init__(self, conn: TrioConnection) -> None:
        self._conn = conn
        self._open = True

    @property
    def dialect(self) -> Literal["postgresql"]:
        return "postgresql"

    @property
    def driver(self) -> TrioConnection:
        self._check_open()
        return self._conn

    def _check_open(self) -> None:
        if not self._open:
            raise DBOSException("this transaction is over: its connection cannot be used now")

    def end(self) -> None:
        self._open = False

    async def _cursor(self, sql: str, params: Params) -> psycopg.AsyncCursor[Any]:
        self._check_open()
        _refuse_control(sql)
        # Named parameters take the driver's prepared fast path (one Bind/Execute).
        prepare = True if type(params) is dict else None
        return await self._conn.execute(sql, params, prepare=prepare)

    async def execute(self, sql: str, params: Params = None) -> int:
        return (await self._cursor(sql, params)).rowcount

    async def execute_many(self, sql: str, params: Sequence[Params]) -> int:
        self._check_open()
        _refuse_control(sql)
        cur = self._conn.cursor()
        await cur.executemany(sql, [() if one is None else one for one in params])
        return cur.rowcount

    async def fetch_all(self, sql: str, params: Params = None) -> list[Row]:
        rows: list[Row] = await (await self._cursor(sql, params)).fetchall()
        return rows

    async def fetch_one(self, sql: str, params: Params = None) -> Row | None:
        row: Row | None = await (await self._cursor(sql, params)).fetchone()
        return row

    async def fetch_value(self, sql: str, params: Params = None) -> Any:
        row = await self.fetch_one(sql, params)
        return None if row is None else row[0]


class PostgresDatasource:
    """:class:`~.protocol.DatasourceBackend` on a PostgreSQL database."""

    def __init__(
        self,
        url: str,
        *,
        schema: str,
        max_connections: int,
        connect_timeout: float,
        run_migrations: bool,
        prepared_statements: bool = True,
    ) -> None:
        self.url = url
        self.schema = schema
        self.run_migrations = run_migrations
        self.max_connections = max_connections
        self.connect_timeout = connect_timeout
        self.prepared_statements = prepared_statements
        # The URL's secrets never reach an error, a log line or a traceback.
        self._scrub = Scrubber.for_urls(url)
        self._sql = _statements(schema)
        self._pool = self._new_pool()

    def _new_pool(self) -> Pool:
        return Pool(
            self.url,
            max_size=self.max_connections,
            connect_timeout=self.connect_timeout,
            prepared_statements=self.prepared_statements,
            scrub=self._scrub,
        )

    @property
    def description(self) -> str:
        return f"postgresql datasource {redact_url(self.url)} (schema {self.schema!r})"

    async def open(self) -> None:
        # A pool closed by an earlier launch's shutdown is replaced: the same datasource
        # object serves every launch of its DBOS instance.
        if self._pool.closed:
            self._pool = self._new_pool()
        try:
            async with self._pool.connection() as conn:
                await migrate.migrate_postgres(
                    conn, self.schema, run_migrations=self.run_migrations
                )
        except psycopg.Error as error:
            await self._pool.close()
            raise DBOSInitializationError(f"cannot open the {self.description}: {error}") from None
        except BaseException:
            await self._pool.close()
            raise

    async def close(self) -> None:
        await self._pool.close()

    def _closed(self) -> DatabaseClosed:
        return DatabaseClosed(f"the {self.description} is closed")

    async def run(
        self,
        isolation: IsolationLevel,
        body: Callable[[TransactionConnection], Awaitable[T]],
        target: CheckpointTarget | None,
    ) -> T:
        try:
            async with self._pool.connection() as conn:
                return await self._attempt(conn, isolation, body, target)
        except PoolClosed:
            raise self._closed() from None

    async def _attempt(
        self,
        conn: TrioConnection,
        isolation: IsolationLevel,
        body: Callable[[TransactionConnection], Awaitable[T]],
        target: CheckpointTarget | None,
    ) -> T:
        # On any exit but COMMIT the transaction stays open, and the pool rolls it back.
        await conn.execute(f"BEGIN ISOLATION LEVEL {isolation}")
        tx = PostgresTransactionConnection(conn)
        try:
            value = await body(tx)
        finally:
            tx.end()
        if conn.pgconn.transaction_status == _IDLE:
            raise ended_by_body()
        if target is not None:
            output, serialization = target.encode(value)
            await self._insert(conn, target, output, None, serialization)
            await target.fence()
        await self._commit(conn)
        return value

    async def _insert(
        self,
        conn: TrioConnection,
        target: CheckpointTarget,
        output: str | None,
        error: str | None,
        serialization: str,
    ) -> None:
        params = target.row(output, error, serialization)
        cur = await conn.execute(self._sql["insert_checkpoint"], params, prepare=True)
        if await cur.fetchone() is None:
            raise StepAlreadyRecorded(f"step {target.step_id} of {target.workflow_id}")

    async def _commit(self, conn: TrioConnection) -> None:
        try:
            await conn.execute("COMMIT")
        except psycopg.Error as error:
            if isinstance(map_error(error, self._scrub), ConnectionLost):
                raise TransactionOutcomeUnknown(
                    f"the connection to the {self.description} failed during COMMIT: the "
                    f"transaction may or may not have committed ({self._scrub(error)})"
                ) from scrubbed(error, self._scrub)
            raise  # the server answered: it did not commit

    async def record_error(self, target: CheckpointTarget, error: str, serialization: str) -> None:
        try:
            async with self._pool.connection() as conn:
                await conn.execute("BEGIN")
                await self._insert(conn, target, None, error, serialization)
                await target.fence()
                await self._commit(conn)
        except PoolClosed:
            raise self._closed() from None

    async def recorded(self, workflow_id: str, step_id: int) -> RecordedOutput | None:
        params = {"workflow_id": workflow_id, "step_id": step_id}
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(self._sql["recorded_checkpoint"], params, prepare=True)
                row = await cur.fetchone()
        except PoolClosed:
            raise self._closed() from None
        return None if row is None else RecordedOutput(row[0], row[1], row[2])

    async def delete_checkpoints(
        self, workflow_id: str, *, from_step: int = 1, fence: Callable[[], Awaitable[None]]
    ) -> None:
        params: Mapping[str, Any] = {"workflow_id": workflow_id, "from_step": from_step}
        try:
            async with self._pool.connection() as conn:
                await conn.execute("BEGIN")
                await conn.execute(self._sql["delete_checkpoints"], params, prepare=True)
                # Delete, then check: every row removed predates any later owner's.
                await fence()
                await self._commit(conn)
        except PoolClosed:
            raise self._closed() from None

    def failure_kind(self, error: BaseException) -> FailureKind | None:
        if isinstance(error, TransactionOutcomeUnknown):
            return "connection"
        if not isinstance(error, psycopg.Error) or isinstance(error, PoolClosed):
            return None
        if error.sqlstate in SERIALIZATION_FAILURES:
            return "serialization"
        if isinstance(map_error(error, self._scrub), ConnectionLost):
            return "connection"
        return None


def _refuse_control(sql: str) -> None:
    reason = refusal(sql)
    if reason is not None:
        raise DBOSInvalidArgumentError(reason)
