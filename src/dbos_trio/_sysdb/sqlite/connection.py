"""One SQLite connection, driven synchronously from the Trio thread: the SQLite backend's
driver boundary.

Invariants, and why:

* Every statement runs in the Trio thread, synchronously (stdlib ``sqlite3``, no worker
  threads): a call never waits on a socket or a thread, so under
  ``trio.testing.MockClock(autojump_threshold=0)`` virtual time only moves when every task
  really is idle. Each operation is still an ``async`` call: it checkpoints first, so it
  yields to other tasks and honours cancellation *before* anything is written.
* An operation is one transaction, run to completion without an ``await`` inside it, so
  Trio tasks sharing this connection never interleave their transactions. A write
  transaction starts with ``BEGIN IMMEDIATE``: it takes SQLite's single write lock up
  front, so a check and the write that depends on it are never separated by another writer
  (another connection, another process).
* The busy timeout is 0: a lock held elsewhere fails at once with SQLITE_BUSY instead of
  blocking the event loop. Errors are mapped here into the kinds of
  :mod:`dbos_trio._sysdb.errors` (busy is :class:`~dbos_trio._sysdb.errors.Contention`) and
  retried by the backend's :class:`~dbos_trio._sysdb.retry.Retrier` after a ``trio.sleep``
  backoff, for a bound measured in *real* time (a virtual clock must not make a competing
  process's lock look eternal, nor expire the bound in a blink).
* WAL journal, ``synchronous=NORMAL``, foreign keys on. With WAL and NORMAL a commit
  survives the process crashing; the last commits before a power failure or OS crash may
  be lost (never corrupted). See docs/sqlite.md.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from typing import Literal, TypeAlias, TypeVar

import trio

from dbos_trio._sysdb.errors import DatabaseClosed, SystemDatabaseUnreachable
from dbos_trio._sysdb.retry import CONTENTION_BACKOFF, Attempts, Retrier, RetryPolicy
from dbos_trio._sysdb.sqlite.errors import DRIVER_ERRORS, map_error
from dbos_trio.errors import DBOSInitializationError

logger = logging.getLogger("dbos_trio._sysdb.sqlite")

T = TypeVar("T")
Mode: TypeAlias = Literal["read", "write", "none"]
_BEGIN: dict[str, str | None] = {"read": "BEGIN", "write": "BEGIN IMMEDIATE", "none": None}

MEMORY = ":memory:"
URL_PREFIX = "sqlite:///"
BUSY_BUDGET_SECONDS = 30.0
"""Real seconds an operation keeps retrying while another connection holds the write lock."""
BUSY_RETRY = RetryPolicy(
    connection=None, contention=CONTENTION_BACKOFF, limit_seconds=BUSY_BUDGET_SECONDS
)
"""For short-lived users (a client, the CLI): a held lock is waited out, in short steps,
for a bounded time. An executor waits it out for as long as it lives."""


def database_path(url: str) -> str:
    """The file a ``sqlite:///path`` URL names (``sqlite:////abs/path`` for an absolute one).

    ``sqlite:///:memory:`` is a private in-memory database, gone when the executor closes.
    """
    if not url.startswith(URL_PREFIX):
        raise DBOSInitializationError(
            f"unsupported SQLite URL {url!r}: use sqlite:///relative/path, "
            "sqlite:////absolute/path or sqlite:///:memory:"
        )
    path = url[len(URL_PREFIX) :]
    if not path or "?" in path or "#" in path:
        raise DBOSInitializationError(
            f"SQLite URL {url!r} must name a file and carry no query string"
        )
    return path


def path_hint(path: str) -> str:
    """What to check when the file ``path`` names cannot be opened or does not exist, as
    `` (...)`` to append to a message, or "". ``sqlite:///tmp/x`` (three slashes) is the relative
    path ``tmp/x``; an absolute one takes four, a common slip the URL alone cannot tell
    apart from intent, so it is only suggested when the absolute reading would work."""
    if path == MEMORY or os.path.isabs(path):
        return ""
    directory = os.path.dirname(path) or "."
    absolute = "/" + path
    if not os.path.isdir(directory):
        hint = f"its directory {directory!r} does not exist in {os.getcwd()!r}"
    else:
        hint = f"{path!r} is relative to the working directory {os.getcwd()!r}"
    if os.path.isdir(os.path.dirname(absolute)):
        hint += f"; for the absolute path {absolute!r} write four slashes: sqlite:///{absolute}"
    return f" ({hint})"


class Connection:
    """The backend's one connection: reads and writes, one transaction per operation."""

    def __init__(self, raw: sqlite3.Connection, path: str, retrier: Retrier) -> None:
        self._raw = raw
        self.path = path
        self.closed = False
        self.retrier = retrier

    @classmethod
    async def open(cls, path: str, *, retry: RetryPolicy = BUSY_RETRY) -> Connection:
        """Connect and apply the pragmas (creating the file if it does not exist)."""
        try:
            raw = sqlite3.connect(path, timeout=0, isolation_level=None, cached_statements=256)
        except sqlite3.Error as error:
            # Unreachable, as a PostgreSQL server that refuses is: nothing to talk to there.
            raise SystemDatabaseUnreachable(
                f"cannot open the SQLite system database {path!r}: {error}{path_hint(path)}"
            ) from None
        connection = cls(raw, path, Retrier(retry))
        try:
            await connection.run(_configure, mode="none")
        except BaseException:
            connection.close()
            raise
        return connection

    @property
    def raw(self) -> sqlite3.Connection:
        """The ``sqlite3`` connection itself (for the migration runner and tests)."""
        return self._raw

    @property
    def busy_retries(self) -> int:
        """How many times an operation waited out another writer (or retried otherwise)."""
        return self.retrier.retries

    def close(self) -> None:
        """Close the connection. Idempotent; later operations fail with
        :class:`~dbos_trio._sysdb.errors.DatabaseClosed`."""
        if not self.closed:
            self.closed = True
            self._raw.close()

    async def read(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``operation`` in one read transaction (a consistent snapshot)."""
        return await self.run(operation, mode="read")

    async def fetch(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run a single-statement ``operation`` outside any explicit transaction."""
        return await self.run(operation, mode="none")

    async def write(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``operation`` in one write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``)."""
        return await self.run(operation, mode="write")

    async def run(
        self,
        operation: Callable[[sqlite3.Connection], T],
        *,
        mode: Mode,
        policy: RetryPolicy | None = None,
    ) -> T:
        """Checkpoint, then run ``operation`` in one transaction, retrying per ``policy``.

        ``operation`` gets the raw connection and must not await (it cannot: it is a plain
        function). If it raises, the transaction rolls back and the exception propagates,
        an ``sqlite3`` error mapped to its kind (:mod:`dbos_trio._sysdb.errors`) once the
        policy (the connection's own by default) gave up on it. ``mode`` is ``"write"``
        (``BEGIN IMMEDIATE``), ``"read"`` (``BEGIN``) or ``"none"`` (no explicit
        transaction: for one statement, or for pragmas that refuse to run in one).
        """
        await trio.lowlevel.checkpoint()
        begin = _BEGIN[mode]
        attempts: Attempts | None = None
        while True:
            if self.closed:
                raise DatabaseClosed("the SQLite system database is closed")
            try:
                result = self._transaction(operation, begin)
            except DRIVER_ERRORS as error:
                attempts = await self.retrier.pause(map_error(error), attempts, policy)
                continue
            if self.retrier.outage is not None:
                self.retrier.succeeded()
            return result

    def _transaction(self, operation: Callable[[sqlite3.Connection], T], begin: str | None) -> T:
        raw = self._raw
        if begin is None:
            return operation(raw)
        raw.execute(begin)
        try:
            result = operation(raw)
            raw.execute("COMMIT")
        except BaseException:
            if raw.in_transaction:
                try:
                    raw.execute("ROLLBACK")
                except sqlite3.Error as rollback_error:  # the connection is unusable
                    logger.warning("SQLite rollback failed: %s", rollback_error)
            raise
        return result


def _configure(raw: sqlite3.Connection) -> None:
    """Per-connection settings (outside any transaction: journal_mode refuses one)."""
    raw.execute("PRAGMA busy_timeout = 0")
    raw.execute("PRAGMA foreign_keys = ON")
    raw.execute("PRAGMA synchronous = NORMAL")
    if raw.execute("PRAGMA database_list").fetchone()[2]:  # a file, not :memory:
        mode = raw.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            logger.warning("SQLite refused WAL mode (journal_mode=%s)", mode)


def file_exists(path: str) -> bool:
    return path == MEMORY or os.path.exists(path)


FAIL_IF_BUSY = RetryPolicy(connection=None, contention=None)
"""For callers that back off on their own (the dequeue claim): a held lock raises
:class:`~dbos_trio._sysdb.errors.Contention` at once."""
