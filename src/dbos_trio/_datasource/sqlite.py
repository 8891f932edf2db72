"""A SQLite datasource: the application's own database for the embedded default.

Invariants, and why:

* One ``sqlite3`` connection, driven synchronously from the Trio thread (as the SQLite
  system database is): a statement never waits on a socket or a thread, so transactions
  work under an autojumping ``MockClock``. Every statement call is still a Trio
  checkpoint, where cancellation lands; the transaction then rolls back at once.
* One transaction at a time per datasource, under a ``trio.Lock`` held from ``BEGIN
  IMMEDIATE`` to ``COMMIT``/``ROLLBACK``: the function awaits between its statements, and
  another task's statements must never land in its transaction. Every transaction takes
  SQLite's write lock up front, so it is serializable whatever isolation level was asked
  for (READ COMMITTED and REPEATABLE READ get at least what they asked). Transactions of
  one datasource do not nest (the lock would wait on itself): that is refused.
* The busy timeout is 0: another process's write lock fails ``BEGIN IMMEDIATE`` at once,
  which counts as a lost serialization race (as the official SDK counts "database is
  locked"), retried after a Trio sleep rather than by blocking the event loop.
* ``synchronous=FULL``: a commit is on disk before its step's checkpoint is written to
  the system database, so a power failure cannot keep the checkpoint and lose the writes.
"""

from __future__ import annotations

import functools
import logging
import re
import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import trio

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
    ended_by_body,
)
from dbos_trio._sysdb.errors import DatabaseClosed
from dbos_trio._sysdb.sqlite.connection import MEMORY, database_path
from dbos_trio._sysdb.sqlite.errors import is_busy
from dbos_trio._sysdb.statements import load_templates, render
from dbos_trio.errors import DBOSException, DBOSInitializationError, DBOSInvalidArgumentError

logger = logging.getLogger("dbos_trio._datasource")

T = TypeVar("T")

_PLACEHOLDER = re.compile(
    r"%(?:(?P<percent>%)|\((?P<name>[^)]*)\)(?P<named>[sbt])|(?P<plain>[sbt]))"
)


@functools.lru_cache(maxsize=512)
def to_sqlite(sql: str, named: bool) -> str:
    """psycopg's placeholders in sqlite3's style: ``%s`` → ``?``, ``%(name)s`` → ``:name``,
    ``%%`` → ``%``. ``named`` says which kind the parameters are; mixing them, or a ``%``
    that is none of these, raises ``DBOSInvalidArgumentError`` (psycopg refuses them too)."""

    def replace(match: re.Match[str]) -> str:
        if match["percent"]:
            return "%"
        if (match["name"] is not None) != named:
            kind = "a mapping" if named else "a sequence"
            raise DBOSInvalidArgumentError(
                f"the parameters are {kind}, but the statement has a {match.group()} placeholder"
            )
        if match["name"] is not None:
            if not match["name"].isidentifier():
                raise DBOSInvalidArgumentError(f"bad placeholder name in {match.group()!r}")
            return f":{match['name']}"
        return "?"

    converted = _PLACEHOLDER.sub(replace, sql)
    leftover = _PLACEHOLDER.sub("", sql)
    if "%" in leftover:
        raise DBOSInvalidArgumentError(
            "a '%' in the statement is not a placeholder: use %s, %(name)s, or %% for a literal %"
        )
    return converted


def _arguments(sql: str, params: Params) -> tuple[str, Any]:
    if params is None:
        return sql, ()  # no parameters: the text is sent as written (psycopg does the same)
    if isinstance(params, Mapping):
        return to_sqlite(sql, True), dict(params)
    if isinstance(params, str | bytes):
        raise DBOSInvalidArgumentError("params must be a sequence or a mapping, not a string")
    return to_sqlite(sql, False), tuple(params)


class SQLiteTransactionConnection:
    """:class:`~.protocol.TransactionConnection` on the datasource's ``sqlite3`` connection."""

    __slots__ = ("_open", "_raw")

    def __init__(self, raw: sqlite3.Connection) -> None:
        self._raw = raw
        self._open = True

    @property
    def dialect(self) -> Literal["sqlite"]:
        return "sqlite"

    @property
    def driver(self) -> sqlite3.Connection:
        self._check_open()
        return self._raw

    def _check_open(self) -> None:
        if not self._open:
            raise DBOSException("this transaction is over: its connection cannot be used now")

    def end(self) -> None:
        self._open = False

    async def _cursor(self, sql: str, params: Params) -> sqlite3.Cursor:
        await trio.lowlevel.checkpoint()
        self._check_open()
        _refuse_control(sql)
        text, arguments = _arguments(sql, params)
        return self._raw.execute(text, arguments)

    async def execute(self, sql: str, params: Params = None) -> int:
        return (await self._cursor(sql, params)).rowcount

    async def execute_many(self, sql: str, params: Sequence[Params]) -> int:
        await trio.lowlevel.checkpoint()
        self._check_open()
        _refuse_control(sql)
        sets = list(params)
        if not sets:
            return 0
        text, _ = _arguments(sql, sets[0])
        arguments = [_arguments(sql, one)[1] for one in sets]
        return self._raw.executemany(text, arguments).rowcount

    async def fetch_all(self, sql: str, params: Params = None) -> list[Row]:
        return list((await self._cursor(sql, params)).fetchall())

    async def fetch_one(self, sql: str, params: Params = None) -> Row | None:
        row: Row | None = (await self._cursor(sql, params)).fetchone()
        return row

    async def fetch_value(self, sql: str, params: Params = None) -> Any:
        row = await self.fetch_one(sql, params)
        return None if row is None else row[0]


class SQLiteDatasource:
    """:class:`~.protocol.DatasourceBackend` on a SQLite file."""

    def __init__(self, url: str, *, run_migrations: bool) -> None:
        self.url = url
        self.path = database_path(url)
        self.run_migrations = run_migrations
        self._raw: sqlite3.Connection | None = None
        self._lock = trio.Lock()
        self._sql = {
            name: render(template, {"outputs": OUTPUTS_TABLE}, name=name)
            for name, template in load_templates(__package__ or "dbos_trio._datasource").items()
        }

    @property
    def description(self) -> str:
        return f"sqlite datasource {self.path!r}"

    async def open(self) -> None:
        try:
            raw = sqlite3.connect(self.path, timeout=0, isolation_level=None)
        except sqlite3.Error as error:
            raise DBOSInitializationError(f"cannot open the {self.description}: {error}") from None
        try:
            raw.execute("PRAGMA busy_timeout = 0")
            raw.execute("PRAGMA foreign_keys = ON")
            raw.execute("PRAGMA synchronous = FULL")
            if self.path != MEMORY:
                raw.execute("PRAGMA journal_mode = WAL")
            await migrate.migrate_sqlite(raw, self.description, run_migrations=self.run_migrations)
        except sqlite3.Error as error:
            raw.close()
            raise DBOSInitializationError(f"cannot open the {self.description}: {error}") from None
        except BaseException:
            raw.close()
            raise
        self._raw = raw

    async def close(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            raw.close()

    def _connection(self) -> sqlite3.Connection:
        if self._raw is None:
            raise DatabaseClosed(f"the {self.description} is closed")
        return self._raw

    async def _locked(self, work: Callable[[sqlite3.Connection], Awaitable[T]]) -> T:
        if self._lock.statistics().owner is trio.lowlevel.current_task():
            raise DBOSException(
                f"a transaction of the {self.description} is already open in this task: "
                "transactions of one SQLite datasource cannot nest"
            )
        async with self._lock:
            return await work(self._connection())

    async def _transaction(self, raw: sqlite3.Connection, work: Callable[[], Awaitable[T]]) -> T:
        await trio.lowlevel.checkpoint_if_cancelled()
        raw.execute("BEGIN IMMEDIATE")  # busy: a lost race, retried by the caller
        try:
            result = await work()
            raw.execute("COMMIT")
        except BaseException:
            if raw.in_transaction:
                try:
                    raw.execute("ROLLBACK")
                except sqlite3.Error as error:  # the connection is unusable
                    logger.warning("SQLite datasource rollback failed: %s", error)
            raise
        return result

    async def run(
        self,
        isolation: IsolationLevel,
        body: Callable[[TransactionConnection], Awaitable[T]],
        target: CheckpointTarget | None,
    ) -> T:
        async def attempt(raw: sqlite3.Connection) -> T:
            async def work() -> T:
                tx = SQLiteTransactionConnection(raw)
                try:
                    value = await body(tx)
                finally:
                    tx.end()
                if not raw.in_transaction:
                    raise ended_by_body()
                if target is not None:
                    output, serialization = target.encode(value)
                    self._insert(raw, target, output, None, serialization)
                    await target.fence()
                return value

            return await self._transaction(raw, work)

        return await self._locked(attempt)

    def _insert(
        self,
        raw: sqlite3.Connection,
        target: CheckpointTarget,
        output: str | None,
        error: str | None,
        serialization: str,
    ) -> None:
        params = target.row(output, error, serialization)
        if raw.execute(self._sql["insert_checkpoint"], params).fetchone() is None:
            raise StepAlreadyRecorded(f"step {target.step_id} of {target.workflow_id}")

    async def record_error(self, target: CheckpointTarget, error: str, serialization: str) -> None:
        async def attempt(raw: sqlite3.Connection) -> None:
            async def work() -> None:
                self._insert(raw, target, None, error, serialization)
                await target.fence()

            await self._transaction(raw, work)

        await self._locked(attempt)

    async def recorded(self, workflow_id: str, step_id: int) -> RecordedOutput | None:
        async def read(raw: sqlite3.Connection) -> RecordedOutput | None:
            await trio.lowlevel.checkpoint_if_cancelled()
            params = {"workflow_id": workflow_id, "step_id": step_id}
            row = raw.execute(self._sql["recorded_checkpoint"], params).fetchone()
            return None if row is None else RecordedOutput(row[0], row[1], row[2])

        return await self._locked(read)

    async def delete_checkpoints(
        self, workflow_id: str, *, from_step: int = 1, fence: Callable[[], Awaitable[None]]
    ) -> None:
        async def attempt(raw: sqlite3.Connection) -> None:
            async def work() -> None:
                params = {"workflow_id": workflow_id, "from_step": from_step}
                raw.execute(self._sql["delete_checkpoints"], params)
                await fence()  # delete, then check: every row removed predates a later owner

            await self._transaction(raw, work)

        await self._locked(attempt)

    def failure_kind(self, error: BaseException) -> FailureKind | None:
        if is_busy(error):
            return "serialization"
        return None


def _refuse_control(sql: str) -> None:
    reason = refusal(sql)
    if reason is not None:
        raise DBOSInvalidArgumentError(reason)
