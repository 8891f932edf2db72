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
* Timeouts that guard I/O (connect, cancel) are measured in real time
  (:func:`dbos_trio._clock.real_time_limit`), so they still work under
  ``MockClock(autojump_threshold=0)``, where a Trio deadline around a socket wait fires
  at once.

This relies on psycopg internals (``wait``, ``lock``, ``_connect_gen``, ``_cancel_gen``,
``_should_cancel``, ``AsyncTransaction``); pyproject pins the psycopg minor series, and
``tests/test_driver.py`` must pass on every upgrade.
"""

from __future__ import annotations

import logging
import select
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, TypeVar

import psycopg
import trio
from psycopg import errors as pg_errors
from psycopg import generators, pq
from psycopg._conninfo_attempts import conninfo_attempts
from psycopg.abc import PQGen, PQGenConn
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.transaction import AsyncTransaction
from psycopg.waiting import Ready, Wait

from ..._clock import real_time_limit

logger = logging.getLogger("dbos_trio.driver")

RV = TypeVar("RV")

# How long cleanup after an interruption (server-side cancel + drain, ROLLBACK, COMMIT)
# may take before the connection is given up and closed.
CLEANUP_LIMIT_SECONDS = 5.0

_ACTIVE = pq.TransactionStatus.ACTIVE
_IDLE = pq.TransactionStatus.IDLE
_BAD = pq.ConnStatus.BAD


def _ready_now(fileno: int, wait: Wait) -> Ready:
    """Which of the awaited directions are ready right now, without blocking."""
    events = 0
    if wait & Wait.R:
        events |= select.POLLIN
    if wait & Wait.W:
        events |= select.POLLOUT
    poller = select.poll()
    poller.register(fileno, events)
    ready = 0
    for _fd, revents in poller.poll(0):
        if revents & (select.POLLIN | select.POLLERR | select.POLLHUP):
            ready |= Ready.R
        if revents & (select.POLLOUT | select.POLLERR | select.POLLHUP):
            ready |= Ready.W
    return Ready(ready)


async def _wait_socket(fileno: int, wait: Wait) -> Ready:
    if wait == Wait.R:
        await trio.lowlevel.wait_readable(fileno)
        return Ready.R
    if wait == Wait.W:
        await trio.lowlevel.wait_writable(fileno)
        return Ready.W
    # Wait.RW only happens while flushing a large send: rare enough to afford two tasks.
    became_ready = 0
    try:
        async with trio.open_nursery() as nursery:

            async def watch(direction: Ready) -> None:
                nonlocal became_ready
                if direction == Ready.R:
                    await trio.lowlevel.wait_readable(fileno)
                else:
                    await trio.lowlevel.wait_writable(fileno)
                became_ready |= direction
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch, Ready.R)
            nursery.start_soon(watch, Ready.W)
    except BaseExceptionGroup as group:
        # The two watchers are an implementation detail: callers (and code that catches
        # ``trio.Cancelled``) must see the same exception a single wait would raise.
        raise _one_of(group) from None
    return Ready(became_ready)


def _one_of(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception of ``group`` a single task would have raised: an error or interrupt
    if there is one, else one of its ``Cancelled``."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        error = pending.pop(0)
        if isinstance(error, BaseExceptionGroup):
            pending.extend(error.exceptions)
        else:
            leaves.append(error)
    for error in leaves:
        if not isinstance(error, trio.Cancelled):
            return error
    return leaves[0]


async def _drive(gen: PQGen[RV], fileno: int, *, resume: bool = False) -> RV:
    """Run a psycopg query generator to completion on ``fileno``.

    ``resume`` continues a generator whose wait was interrupted: it is sent "nothing is
    ready" (``Ready.NONE``, never ``None``: the compiled generators of psycopg-binary only
    accept an integer), which makes it yield what it waits for again.
    """
    try:
        wait = gen.send(Ready.NONE) if resume else next(gen)
        while True:
            # A socket asked for writing is nearly always writable: a zero-timeout poll is
            # much cheaper than a trip through the scheduler.
            ready = _ready_now(fileno, wait) if wait & Wait.W else Ready.NONE
            if not ready:
                ready = await _wait_socket(fileno, wait)
            wait = gen.send(ready)
    except StopIteration as done:
        result: RV = done.value
        return result


async def _drive_conn(gen: PQGenConn[RV]) -> RV:
    """Run a psycopg connection-level generator (which may change socket) to completion."""
    try:
        fileno, wait = next(gen)
        while True:
            ready = await _wait_socket(fileno, wait)
            fileno, wait = gen.send(ready)
    except StopIteration as done:
        result: RV = done.value
        return result


class TrioConnection(psycopg.AsyncConnection[Any]):
    """A psycopg ``AsyncConnection`` whose I/O, locking and cancellation are Trio's."""

    def __init__(self, pgconn: pq.abc.PGconn, row_factory: Any = psycopg.rows.tuple_row):
        super().__init__(pgconn, row_factory)
        self.lock = trio.Lock()  # type: ignore[assignment]

    @trio.lowlevel.enable_ki_protection
    async def wait(self, gen: PQGen[RV], interval: float = 0.0, timeout: float | None = None) -> RV:
        fileno = self.pgconn.socket
        try:
            if timeout is None:
                return await _drive(gen, fileno)
            with real_time_limit(timeout):
                return await _drive(gen, fileno)
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
                    await _drive(gen, self.pgconn.socket, resume=True)
                if self.pgconn.transaction_status == _ACTIVE:
                    await _drive(generators.fetch_many(self.pgconn), self.pgconn.socket)
            except Exception as error:
                logger.warning("query cancellation failed (%s): closing the connection", error)
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
                await _drive_conn(self._cancel_gen())
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
                if not _ready_now(pgconn.socket, Wait.R):
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


async def connect(
    conninfo: str = "",
    *,
    autocommit: bool = False,
    connect_timeout: float = 10.0,
    prepare_threshold: int | None = 5,
    **params: Any,
) -> TrioConnection:
    """Open a :class:`TrioConnection`, trying each host the conninfo names in turn.

    ``connect_timeout`` bounds each attempt in real time. Name resolution runs in a worker
    thread (libpq would otherwise block the Trio loop on DNS).
    """
    attempts = await trio.to_thread.run_sync(
        conninfo_attempts, conninfo_to_dict(conninfo, **params)
    )
    failures: list[str] = []
    last_error: psycopg.Error | None = None
    for attempt in attempts:
        described = f"host {attempt.get('host')!r}, port {attempt.get('port')!r}"
        try:
            with real_time_limit(connect_timeout) as limit:
                conn = await _drive_conn(TrioConnection._connect_gen(make_conninfo("", **attempt)))
            if limit.cancelled_caught:
                raise pg_errors.ConnectionTimeout(
                    f"connection timeout expired after {connect_timeout:g} s"
                )
        except psycopg.Error as error:
            last_error = error
            failures.append(f"{described}: {error}")
            continue
        conn._autocommit = autocommit
        conn.prepare_threshold = prepare_threshold
        return conn
    if last_error is None:
        raise psycopg.OperationalError("no host to connect to")
    if len(failures) == 1:
        raise last_error.with_traceback(None)
    raise type(last_error)("; ".join(failures)).with_traceback(None)
