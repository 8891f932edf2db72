"""psycopg 3 driven natively from Trio.

psycopg expresses every conversation with the server as a generator that yields "wait for
the socket to be readable/writable" and is resumed with what became ready. Its
``AsyncConnection`` drives those generators with asyncio; :class:`TrioConnection` drives
them with ``trio.lowlevel.wait_readable``/``wait_writable`` instead, so a query costs what
it costs on asyncio and needs neither a second event loop nor a thread.

Invariants, and why:

* Trio cancellation is level-triggered: once a scope is cancelled every later checkpoint
  in it raises again. So everything that must run after a cancellation (cancelling the
  query on the server, ROLLBACK/COMMIT at transaction exit, returning a connection) runs in
  a shielded scope, bounded by a *real-time* limit so it cannot hang forever.
* A query interrupted by cancellation or Ctrl-C is cancelled on the server and its
  generator drained, so the connection comes back usable; if that fails within the limit
  the connection is closed, never handed back half-way through a conversation.
* psycopg's asyncio primitives are replaced: the connection lock is a ``trio.Lock`` (an
  ``asyncio.Lock`` breaks as soon as two Trio tasks contend for it).
* Timeouts that guard I/O (connecting, in :mod:`.connecting`; cancel) are measured in real time
  (:func:`dbos_trio._clock.real_time_limit`), so they still work under
  ``MockClock(autojump_threshold=0)``, where a Trio deadline around a socket wait fires
  at once.
* ``execute(query, {named params}, prepare=True)`` — every hot statement of the backend —
  skips psycopg's generic machinery (query conversion, prepare bookkeeping, the lock's
  scheduler trip), which cost about as much client CPU as the round trip itself: the
  statement is converted once per process, prepared once per connection and parameter
  types (psycopg's own key), and run as one Bind/Execute. What comes back is an ordinary
  cursor holding the result; :meth:`TrioConnection.fetch`, the backend's call, skips the
  cursor too and reads the rows straight from libpq's result. psycopg's ``DEALLOCATE
  ALL`` (after a ROLLBACK, say) drops these statements too, so it empties their table as
  well.

This relies on psycopg internals (``wait``, ``lock``, ``_connect_gen``, ``_cancel_gen``,
``_should_cancel``, ``_deallocate``, ``_query2pg`` in :mod:`.fast_statements`, the
cursor's ``_tx``/``_set_results``, ``AsyncTransaction``); pyproject pins the psycopg minor
series, and
``tests/sysdb/test_driver.py`` must pass on every upgrade.
"""

from __future__ import annotations

import logging
import select
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any, TypeVar, cast

import psycopg
import trio
from psycopg import adapt, generators, pq
from psycopg import errors as pg_errors
from psycopg.abc import Params, PQGen, Query, Transformer
from psycopg.transaction import AsyncTransaction

from dbos_trio._clock import real_time_limit
from dbos_trio._pg.fast_statements import FastStatement, fast_statement, first_error
from dbos_trio._pg.waiting import drive, drive_conn
from dbos_trio._redact import NO_SECRETS, Scrubber

logger = logging.getLogger("dbos_trio.driver")

RV = TypeVar("RV")
Row = tuple[Any, ...]

# How long cleanup after an interruption (server-side cancel + drain, ROLLBACK, COMMIT)
# may take before the connection is given up and closed.
CLEANUP_LIMIT_SECONDS = 5.0

_ACTIVE = pq.TransactionStatus.ACTIVE
_IDLE = pq.TransactionStatus.IDLE
_BAD = pq.ConnStatus.BAD
_TEXT = pq.Format.TEXT
_TUPLES_OK = pq.ExecStatus.TUPLES_OK
_COMMAND_OK = pq.ExecStatus.COMMAND_OK

_DEALLOCATED_ALL = ("DEALLOCATE ALL", "DISCARD ALL")
# Statements prepared by the fast path, per connection, before the oldest is deallocated.
PREPARED_MAX = 200


class TrioConnection(psycopg.AsyncConnection[Any]):
    """A psycopg ``AsyncConnection`` whose I/O, locking and cancellation are Trio's."""

    def __init__(self, pgconn: pq.abc.PGconn, row_factory: Any = psycopg.rows.tuple_row):
        super().__init__(pgconn, row_factory)
        self.lock = trio.Lock()  # type: ignore[assignment]
        # Fast-path statements prepared on this connection: (query, param types) -> name.
        self._fast_names: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
        self._fast_index = 0
        self._fast_dumper: Transformer | None = None
        self._fast_loader: Transformer | None = None
        # A poll object watching the socket for input, for the idle health check.
        self._idle_poller: tuple[int, select.poll] | None = None
        # The secrets of the URL this connection was opened with, kept out of its logs.
        self.scrub: Scrubber = NO_SECRETS

    def _socket_readable(self) -> bool:
        """Whether the socket has input (or EOF, or an error) right now, without blocking."""
        fileno = self.pgconn.socket
        if self._idle_poller is None or self._idle_poller[0] != fileno:
            poller = select.poll()
            poller.register(fileno, select.POLLIN)
            self._idle_poller = (fileno, poller)
        return bool(self._idle_poller[1].poll(0))

    async def execute(
        self,
        query: Query,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool = False,
    ) -> psycopg.AsyncCursor[Any]:
        """psycopg's ``execute``; a prepared statement with named parameters takes the
        fast path (see the module docstring), everything else psycopg's own."""
        if (
            prepare
            and type(params) is dict
            and type(query) is str
            and not binary
            and self._fast_path_open()
        ):
            statement = fast_statement(query)
            if statement is not None:
                return await self._execute_fast(statement, params)
        # (psycopg's overloads keep a Template apart from params; this passes both on.)
        base: Any = super()
        cursor: psycopg.AsyncCursor[Any] = await base.execute(
            query, params, prepare=prepare, binary=binary
        )
        if self._fast_names and cursor.statusmessage in _DEALLOCATED_ALL:
            self._fast_names.clear()
        return cursor

    async def fetch(self, query: str, params: Mapping[str, Any]) -> tuple[list[Row], int]:
        """The rows and the row count of ``query`` run as a prepared statement, without a
        cursor: the backend's hot statements read their result straight from libpq's
        (psycopg's cursor and result objects cost a tenth of such a call). A query the
        fast path does not take goes through :meth:`execute`. Errors and cancellation are
        :meth:`execute`'s."""
        statement = self.fast_statement_for(query, params)
        if statement is None:
            cur = await self.execute(query, params, prepare=True)
            pgresult = cur.pgresult
            tuples = pgresult is not None and pgresult.status == _TUPLES_OK
            return (await cur.fetchall() if tuples else []), cur.rowcount
        results = await self._run_fast(statement, cast(dict[str, Any], params))
        result = results[0] if len(results) == 1 else None
        status = None if result is None else result.status
        if status == _TUPLES_OK:
            assert result is not None
            loader = self._fast_loader
            if loader is None:
                loader = self._fast_loader = adapt.Transformer(self)
            loader.set_pgresult(result)
            rows: list[Row] = loader.load_rows(0, result.ntuples, tuple)
            loader.set_pgresult(None)  # the connection holds no result once it is read
        elif status == _COMMAND_OK:
            assert result is not None
            rows = []
        else:
            self.cursor()._check_results(results)  # raises what psycopg would
            raise psycopg.InternalError(f"{len(results)} results for one statement")
        count = result.command_tuples
        return rows, -1 if count is None else count

    def fast_statement_for(self, query: str, params: Mapping[str, Any]) -> FastStatement | None:
        """What :meth:`fetch` runs on its fast path for this call, or None if it hands the
        call to :meth:`execute`."""
        if type(params) is not dict or not self._fast_path_open():
            return None
        return fast_statement(query)

    def _fast_path_open(self) -> bool:
        """Whether the fast path may run a statement now (see :meth:`execute`)."""
        return (
            self._pipeline is None
            and self._prepared.prepare_threshold is not None
            and (self._autocommit or self.pgconn.transaction_status != _IDLE)
        )

    async def _execute_fast(
        self, statement: FastStatement, params: dict[str, Any]
    ) -> psycopg.AsyncCursor[Any]:
        results = await self._run_fast(statement, params)
        cur = self.cursor()
        cur._tx = adapt.Transformer(cur)  # loads this cursor's result
        cur._check_results(results)
        cur._set_results(results)
        return cur

    async def _run_fast(
        self, statement: FastStatement, params: dict[str, Any]
    ) -> list[pq.abc.PGresult]:
        """``statement`` as one Bind/Execute (prepared first on this connection if need
        be): libpq's results, an error result raised."""
        try:
            values = [params[name] for name in statement.order]
        except KeyError as missing:
            raise psycopg.ProgrammingError(f"query parameter missing: {missing.args[0]}") from None
        # One dumping transformer per connection keeps its per-type dumper cache warm.
        dumper = self._fast_dumper
        if dumper is None:
            dumper = self._fast_dumper = adapt.Transformer(self)
        dumped = dumper.dump_sequence(values, statement.formats)
        key = (statement.query, cast(tuple[int, ...], dumper.types))
        formats = dumper.formats
        lock = cast(trio.Lock, self.lock)
        try:
            # Uncontended (a pooled connection has one user): no scheduler trip, the
            # round trip below is the checkpoint.
            lock.acquire_nowait()
        except trio.WouldBlock:
            await lock.acquire()
        try:
            for attempt in range(2):
                if self.closed:
                    raise psycopg.OperationalError("the connection is closed")
                in_block = self.pgconn.transaction_status != _IDLE
                name = self._fast_names.get(key)
                if name is None:
                    if len(self._fast_names) >= PREPARED_MAX:
                        oldest = next(iter(self._fast_names))
                        await self.wait(self._deallocate(self._fast_names.pop(oldest)))
                    name = b"_dt_%d" % self._fast_index
                    self._fast_index += 1
                    gen = self._prepare_and_execute_gen(key, name, dumped, formats)
                else:
                    gen = self._execute_prepared_gen(name, dumped, formats)
                results = await self.wait(gen)
                error = first_error(results, self.pgconn)
                if error is None:
                    break
                if not isinstance(error, pg_errors.InvalidSqlStatementName):
                    raise error.with_traceback(None)
                # Deallocated behind our back (a DISCARD ALL, say): prepare again. Outside a
                # transaction block nothing was aborted, so the statement is simply re-run.
                self._fast_names.clear()
                if in_block or attempt:
                    raise error.with_traceback(None)
        finally:
            lock.release()
        return results

    def _execute_prepared_gen(
        self, name: bytes, dumped: Any, formats: Any
    ) -> PQGen[list[pq.abc.PGresult]]:
        self.pgconn.send_query_prepared(name, dumped, param_formats=formats, result_format=_TEXT)
        results: list[pq.abc.PGresult] = yield from generators.execute(self.pgconn)
        return results

    def _prepare_and_execute_gen(
        self, key: tuple[bytes, tuple[int, ...]], name: bytes, dumped: Any, formats: Any
    ) -> PQGen[list[pq.abc.PGresult]]:
        """Prepare, then execute, in one conversation (as psycopg does on first use)."""
        query, types = key
        self.pgconn.send_prepare(name, query, param_types=types)
        error = first_error((yield from generators.execute(self.pgconn)), self.pgconn)
        if error is not None:
            raise error.with_traceback(None)
        self._fast_names[key] = name
        return (yield from self._execute_prepared_gen(name, dumped, formats))

    def _deallocate(self, name: bytes | None) -> PQGen[None]:
        if name is None:
            self._fast_names.clear()  # DEALLOCATE ALL drops the fast path's statements too
        return super()._deallocate(name)

    @trio.lowlevel.enable_ki_protection
    async def wait(self, gen: PQGen[RV], interval: float = 0.0, timeout: float | None = None) -> RV:
        fileno = self.pgconn.socket
        try:
            if timeout is None:
                return await drive(gen, fileno)
            with real_time_limit(timeout):
                return await drive(gen, fileno)
            raise pg_errors._WaitTimeout("wait timeout expired")
        except BaseException:
            # Cancelled, KeyboardInterrupt, SystemExit, or the real-time limit above: a
            # query still running on the server must not outlive this call.
            if not self.closed and self.pgconn.transaction_status == _ACTIVE:
                try:
                    with trio.CancelScope(shield=True):
                        await self._abort_active_query(gen)
                except BaseException:
                    # Interrupted again while cancelling (a second Ctrl-C): the connection
                    # is somewhere in the middle of the conversation; it cannot be reused.
                    self.pgconn.finish()
                    raise
            raise

    async def _abort_active_query(self, gen: PQGen[Any]) -> None:
        """Cancel the running query on the server and drain it, or close the connection.

        Draining the interrupted generator is not always the end of the conversation: a
        generator may cover only part of it (one row of ``cursor.stream()``, say), so
        whatever results remain are read too. A connection still ACTIVE after that — in
        COPY, or with a server that ignored the cancel — is closed, never left half-way.
        """
        with real_time_limit(CLEANUP_LIMIT_SECONDS) as limit:
            try:
                await self.cancel_safe(timeout=CLEANUP_LIMIT_SECONDS)
                with suppress(pg_errors.QueryCanceled):
                    await drive(gen, self.pgconn.socket, resume=True)
                if self.pgconn.transaction_status == _ACTIVE:
                    await drive(generators.fetch_many(self.pgconn), self.pgconn.socket)
            except Exception as error:
                logger.warning(
                    "query cancellation failed (%s): closing the connection", self.scrub(error)
                )
                self.pgconn.finish()
                return
        if limit.cancelled_caught:
            logger.warning("query not terminated after cancellation: closing the connection")
            self.pgconn.finish()
        elif self.pgconn.transaction_status == _ACTIVE:
            logger.warning("query still active after cancellation: closing the connection")
            self.pgconn.finish()

    async def cancel_safe(self, *, timeout: float = 30.0) -> None:
        if not self._should_cancel():
            return
        if psycopg.capabilities.has_cancel_safe():
            with real_time_limit(timeout) as limit:
                await drive_conn(self._cancel_gen())
            if limit.cancelled_caught:
                raise pg_errors.CancellationTimeout("cancellation timeout expired")
        else:
            await trio.to_thread.run_sync(self.cancel)

    @asynccontextmanager
    async def transaction(
        self, savepoint_name: str | None = None, force_rollback: bool = False
    ) -> AsyncIterator[AsyncTransaction]:
        """psycopg's transaction block, with its COMMIT/ROLLBACK shielded from cancellation."""
        tx = AsyncTransaction(self, savepoint_name, force_rollback)
        await tx.__aenter__()
        try:
            yield tx
        except BaseException as error:
            if not await self._shielded_exit(tx, error):
                raise
        else:
            await self._shielded_exit(tx, None)

    async def _shielded_exit(self, tx: AsyncTransaction, error: BaseException | None) -> bool:
        with trio.CancelScope(shield=True), real_time_limit(CLEANUP_LIMIT_SECONDS):
            if error is None:
                return bool(await tx.__aexit__(None, None, None))
            return bool(await tx.__aexit__(type(error), error, error.__traceback__))
        # Only reached when the limit expired: the connection's state is unknown.
        self.pgconn.finish()
        if error is None:
            raise pg_errors.OperationalError("transaction exit timed out; connection closed")
        return False

    def notifications(self) -> NotificationStream:
        """The NOTIFYs this connection receives, as a Trio async iterator.

        Give LISTEN a dedicated autocommit connection: while the iterator waits it holds
        the connection lock only for the duration of each wait, but a LISTEN inside a
        transaction takes effect only at commit.
        """
        return NotificationStream(self)

    def is_healthy_when_idle(self) -> bool:
        """Whether an idle connection is still usable, without a round trip.

        A backend that was terminated (``pg_terminate_backend``, server restart) sends
        a FATAL message and closes the socket; both make the idle socket readable, so a
        zero-timeout poll notices it without pinging. Reading is not enough by itself:
        libpq stops at the data it got, so the end of the stream may go unseen and the
        FATAL message sits parsed-but-unread in its buffer. So the input is parsed (libpq
        hands an error that arrives while idle to the notice processor, where the FATAL
        is spotted), and read again while the socket stays readable, until the end of the
        stream shows. NOTIFYs read on the way are kept for :meth:`notifications`.
        """
        if self.closed or self.pgconn.status == _BAD:
            return False
        if self.pgconn.transaction_status != _IDLE:
            return False
        if not self._socket_readable():
            return True  # the common case: nothing arrived while idle
        pgconn = self.pgconn
        fatal = False
        original_handler = pgconn.notice_handler

        def watch_for_fatal(result: pq.abc.PGresult) -> None:
            nonlocal fatal
            severity = result.error_field(pq.DiagnosticField.SEVERITY_NONLOCALIZED)
            if severity in (b"FATAL", b"PANIC"):
                fatal = True
            if original_handler is not None:
                original_handler(result)

        pgconn.notice_handler = watch_for_fatal
        try:
            # A few rounds at most: each one reads what is there; a live idle socket
            # stops being readable at once, a dead one reaches EOF on the second read.
            for _ in range(4):
                if not self._socket_readable():
                    break
                pgconn.consume_input()
                self._keep_notifications()
                if fatal or pgconn.status == _BAD:
                    return False
        except psycopg.OperationalError:
            return False
        finally:
            pgconn.notice_handler = original_handler
        return not fatal and pgconn.status != _BAD

    def _keep_notifications(self) -> None:
        """Move NOTIFYs libpq has already read into psycopg's backlog (or its handlers)."""
        pgconn = self.pgconn
        while notify := pgconn.notifies():
            if pgconn.notify_handler is not None:
                pgconn.notify_handler(notify)


class NotificationStream:
    """Async iterator over a connection's NOTIFY messages.

    A class rather than an async generator, so abandoning it leaves nothing for the
    garbage collector to finalize in another task (which a ``trio.Lock`` would refuse).
    """

    def __init__(self, conn: TrioConnection) -> None:
        self._conn = conn
        self._buffer: deque[psycopg.Notify] = deque()

    def __aiter__(self) -> NotificationStream:
        return self

    async def __anext__(self) -> psycopg.Notify:
        conn = self._conn
        while not self._buffer:
            # NOTIFYs read while the connection ran a query (or a health check) went to
            # psycopg's backlog, or are still parsed-but-unread in libpq's buffer.
            if not conn.closed:
                conn._keep_notifications()
            backlog = conn._notifies_backlog
            if backlog:
                self._buffer.extend(backlog)
                backlog.clear()
                break
            async with conn.lock:
                # While we wait, psycopg's notify handler must not also append what we
                # receive to the backlog: that would deliver every NOTIFY twice. (psycopg's
                # own ``notifies()`` switches the backlog off the same way.)
                saved_backlog, conn._notifies_backlog = conn._notifies_backlog, None
                try:
                    received = await conn.wait(generators.notifies(conn.pgconn))
                finally:
                    conn._notifies_backlog = saved_backlog
            encoding = conn.pgconn._encoding
            self._buffer.extend(
                psycopg.Notify(n.relname.decode(encoding), n.extra.decode(encoding), n.be_pid)
                for n in received
            )
        return self._buffer.popleft()
