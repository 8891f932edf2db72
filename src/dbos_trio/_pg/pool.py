"""A small Trio pool of autocommit :class:`TrioConnection` objects.

Invariants, and why:

* At most ``max_size`` connections exist; a checkout beyond that waits (FIFO) instead of
  failing, because a burst of workflows should queue, not error.
* A connection goes back to the idle stack only when it is IDLE: one returned inside a
  transaction is rolled back first, one that is ACTIVE, broken or fails the rollback is
  closed. Returning runs shielded (Trio cancellation is level-triggered, so an unshielded
  cleanup in a cancelled scope would never run) under a real-time limit.
* No ping on checkout (it would double the cost of every short statement). An idle
  connection is checked without a round trip instead — a terminated backend leaves its
  socket readable — and a connection that breaks during use is discarded on return.
* Idle connections are reused LIFO, so a light load keeps reusing the warm connections
  whose prepared statements are already on the server.
* A wait is reported: a checkout that waited :data:`SLOW_WAIT_SECONDS` for a free slot,
  or a new connection that took that long to become usable (a session-mode pooler such as
  PgBouncer holds a client's first statement until one of its server connections is
  free, for up to its ``query_wait_timeout``), logs a WARNING saying which, at most once a
  minute, so a stall has a cause in the log rather than only a slow call.
* No secret of the URL leaves the pool in an error or a log line: a failed connection
  raises the driver's scrubbed copy, and :attr:`Pool.scrub` (the URL's secrets, plus any
  the owner adds) is what the pool's users scrub their own error texts with.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import psycopg
import trio
from psycopg import pq

from dbos_trio._clock import monotonic, real_time_limit
from dbos_trio._pg.connecting import connect
from dbos_trio._pg.driver import CLEANUP_LIMIT_SECONDS, TrioConnection
from dbos_trio._redact import Scrubber

logger = logging.getLogger("dbos_trio.pool")

_IDLE = pq.TransactionStatus.IDLE
_IN_TRANSACTION = (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)


# A wait for a slot, or for a new connection to answer, longer than this is reported.
SLOW_WAIT_SECONDS = 5.0
# At most one such report per this many seconds.
SLOW_REPORT_EVERY_SECONDS = 60.0


class PoolClosed(psycopg.InterfaceError):
    """The pool was closed: no more connections are handed out."""


class Pool:
    """Bounded pool of autocommit connections to one database."""

    def __init__(
        self,
        conninfo: str,
        *,
        max_size: int,
        connect_timeout: float = 10.0,
        configure: Callable[[TrioConnection], Awaitable[None]] | None = None,
        prepared_statements: bool = True,
        scrub: Scrubber | None = None,
    ) -> None:
        if max_size < 1:
            raise ValueError(f"max_size must be at least 1, not {max_size}")
        self._conninfo = conninfo
        # The secrets of conninfo, and of the other URLs the owner connects with (``scrub``).
        self.scrub = Scrubber.for_urls(conninfo)
        if scrub is not None:
            self.scrub = self.scrub | scrub
        self.connect_timeout = connect_timeout
        self._configure = configure
        # None turns server-side prepared statements off (PgBouncer in transaction mode).
        self._prepare_threshold: int | None = 5 if prepared_statements else None
        self._slots = trio.Semaphore(max_size)
        self._idle: list[TrioConnection] = []
        self._closed = False
        self.max_size = max_size
        self._last_slow_report = -SLOW_REPORT_EVERY_SECONDS
        self.slow_waits = 0  # how many waits were reported (or would have been)

    async def configure(self, conn: TrioConnection) -> None:
        """Apply the pool's per-connection settings to a connection made elsewhere (the
        direct listener connection), as its own connections get them."""
        if self._configure is not None:
            await self._configure(conn)

    @property
    def closed(self) -> bool:
        return self._closed

    async def open(self) -> None:
        """Connect one connection now, so a bad URL fails at launch rather than later.

        Raises the driver's ``psycopg.Error`` (scrubbed: no secret of the URL in its text,
        nothing chained) if it cannot connect; cancellation abandons the attempt.
        """
        async with self.connection():
            pass

    async def close(self) -> None:
        """Close idle connections now; checked-out ones are closed as they come back."""
        self._closed = True
        while self._idle:
            await self._idle.pop().close()

    def _note_wait(self, seconds: float, what: str) -> None:
        if seconds < SLOW_WAIT_SECONDS:
            return
        self.slow_waits += 1
        now = monotonic()
        if now - self._last_slow_report < SLOW_REPORT_EVERY_SECONDS:
            return
        self._last_slow_report = now
        logger.warning("a database call waited %.1f s %s", seconds, what)

    async def new_connection(self, *, autocommit: bool = True) -> TrioConnection:
        """A connection outside the pool's bound (e.g. for LISTEN), owned by the caller.

        A failure to connect raises the driver's scrubbed ``psycopg.Error``.
        """
        began = monotonic()
        conn = await self._new_connection(autocommit)
        self._note_wait(
            monotonic() - began,
            "for a new connection to answer: a pooler in session mode (PgBouncer) holds a "
            "client until one of its server connections is free, so size its pool_size to "
            "at least the sum of every executor's max_connections plus two each (LISTEN, "
            "NOTIFY); docs/concepts/executors.md",
        )
        return conn

    async def _new_connection(self, autocommit: bool) -> TrioConnection:
        conn = await connect(
            self._conninfo,
            autocommit=autocommit,
            connect_timeout=self.connect_timeout,
            prepare_threshold=self._prepare_threshold,
            scrub=self.scrub,
        )
        if self._configure is not None:
            try:
                await self._configure(conn)
            except BaseException:
                # Half-configured: nobody else holds it, so nobody else would close it.
                await conn.close()
                raise
        return conn

    def connection(self) -> Checkout:
        """Check out a connection for the duration of an ``async with`` block."""
        return Checkout(self)

    async def _check_out(self) -> TrioConnection:
        if self._closed:
            raise PoolClosed("the connection pool is closed")
        try:
            # Fast path: a free slot needs no trip through the scheduler (the query that
            # follows is the checkpoint). Only a full pool waits, FIFO, in acquire().
            self._slots.acquire_nowait()
        except trio.WouldBlock:
            began = monotonic()
            await self._slots.acquire()
            self._note_wait(
                monotonic() - began,
                f"for one of the pool's {self.max_size} connections (every one was in use): "
                "raise the pool size (Config.max_connections) if calls queue like this often",
            )
        try:
            # The pool may have closed while this checkout waited for a slot: fail rather
            # than open a new connection nobody will close until it comes back.
            if self._closed:
                raise PoolClosed("the connection pool is closed")
            return await self._take()
        except BaseException:
            self._slots.release()
            raise

    async def _check_in(self, conn: TrioConnection) -> None:
        try:
            if not self._closed and not conn.closed and conn.pgconn.transaction_status == _IDLE:
                # The common case needs no I/O, so no shielded scope either (entering
                # one is a third of a checkout's cost).
                self._idle.append(conn)
            else:
                with trio.CancelScope(shield=True):
                    await self._give_back(conn)
        finally:
            # Even if returning failed (or Ctrl-C landed in it), the slot is free again:
            # a lost slot would shrink the pool for the rest of the process.
            self._slots.release()

    async def _take(self) -> TrioConnection:
        while self._idle:
            conn = self._idle.pop()
            if conn.is_healthy_when_idle():
                return conn
            logger.info("discarding a pooled connection that died while idle")
            await conn.close()
        return await self.new_connection()

    async def _give_back(self, conn: TrioConnection) -> None:
        if not conn.closed and conn.pgconn.transaction_status in _IN_TRANSACTION:
            with real_time_limit(CLEANUP_LIMIT_SECONDS):
                try:
                    await conn.rollback()
                except Exception as error:
                    # Whatever went wrong, this connection's state is unknown: close it
                    # rather than leak it (or its open transaction) out of the pool.
                    logger.warning(
                        "rollback on return failed (%s): closing connection", self.scrub(error)
                    )
                    await conn.close()
        if self._closed or conn.closed or conn.pgconn.transaction_status != _IDLE:
            await conn.close()
            return
        self._idle.append(conn)


class Checkout:
    """``async with pool.connection() as conn``: the connection for the block.

    A class rather than an ``@asynccontextmanager`` generator, which cost a third of a
    checkout on the hot path.
    """

    __slots__ = ("_conn", "_pool")

    def __init__(self, pool: Pool) -> None:
        self._pool = pool
        self._conn: TrioConnection | None = None

    async def __aenter__(self) -> TrioConnection:
        self._conn = await self._pool._check_out()
        return self._conn

    async def __aexit__(self, *exc_info: object) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._pool._check_in(conn)
