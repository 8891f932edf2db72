"""The NOTIFY side: wake local waiters at once, push to other processes in batches.

Invariants, and why:

* After a write commits, local waiters are woken immediately (no round trip) and the
  payload is queued; the first payload of a batch opens a short coalescing window
  (10 ms by default), after which one ``pg_notify`` statement per channel pushes the
  whole batch. A NOTIFY inside the writing transaction would take PostgreSQL's global
  notify lock at commit and serialize every notifying commit; outside it costs one
  statement per window, whatever the write rate.
* Payloads of an *urgent* channel (enqueues: a worker elsewhere waits for them) go out on
  the leading edge: at once when no batch was pushed within the last window, else at the
  end of that window, with everything pending on every channel. A lone enqueue thus
  reaches other processes one statement after its commit, and under load the statements
  stay at one per window.
* A lone write may carry the leading edge itself (:meth:`Notifier.take_leading_edge`): when
  nothing was pushed within the last window and nothing waits to be, its own statement
  NOTIFYs (delivered at its commit), which saves the push's round trip; that counts as
  the window's push, so still at most one notifying statement per window, and at most
  one notifying commit per window takes the notify lock.
* Idle costs nothing: no timer runs without a pending payload.
* A batch that fails for a transient reason (an outage) is dropped, never retried: a
  notification is only a hint, and waiters re-check the database on their own interval
  anyway. One that the server refuses for what it holds is sent again payload by payload,
  so one bad payload never costs the others their wakeup.
* A payload PostgreSQL would refuse (8000 bytes or more) is never queued: it would fail the
  statement carrying the whole batch. Its waiters elsewhere find the write at their
  re-check; waiters in this process are woken as for any other write.
* With notifications off, payloads are not queued at all; local wakeups still happen.
* The final flush runs at shutdown, before the pool closes.
"""

from __future__ import annotations

import logging

import psycopg
import trio

from dbos_trio._pg.pool import Pool
from dbos_trio._sysdb.errors import TransientDatabaseError
from dbos_trio._sysdb.postgres.errors import map_error
from dbos_trio._sysdb.retry import Retrier
from dbos_trio._sysdb.wakeups import WakeupRegistry

logger = logging.getLogger("dbos_trio.notifier")

# NOTIFY refuses a payload of 8000 bytes or more (in a server built with the default page
# size), failing the whole statement.
MAX_PAYLOAD_BYTES = 7999


class Notifier:
    def __init__(
        self,
        pool: Pool,
        wakeups: WakeupRegistry,
        *,
        window: float,
        push: bool,
        notify_sql: str,
        retrier: Retrier | None = None,
        urgent: frozenset[str] = frozenset(),
    ) -> None:
        self._pool = pool
        self._wakeups = wakeups
        self._window = window
        self._push = push
        self._notify_sql = notify_sql
        self._retrier = retrier
        self._urgent = urgent
        self._pending: dict[str, set[str]] = {}
        self._batch_opened = trio.Event()
        self._urgent_pending = trio.Event()
        self._last_push = -float("inf")  # when the last batch was taken (Trio clock)
        self.flushes = 0

    @property
    def pushes(self) -> bool:
        """Whether payloads are pushed to other processes (notifications on)."""
        return self._push

    def take_leading_edge(self, channel: str) -> bool:
        """Whether a write about to be sent may NOTIFY ``channel`` itself, in its own
        statement: notifications are on, ``channel`` is urgent, nothing was pushed within
        the last window and nothing is pending. True counts as this window's push (the
        caller must then notify in the statement and :meth:`publish` with ``sent``)."""
        if not self._push or channel not in self._urgent or self._pending:
            return False
        now = trio.current_time()
        if now - self._last_push < self._window:
            return False
        self._last_push = now
        return True

    def publish(self, channel: str, payload: str, key: str, *, sent: bool = False) -> None:
        """A write on ``channel`` committed: wake ``key`` here, and push ``payload`` soon
        (``sent``: the write's own statement NOTIFYed it already)."""
        self._wakeups.wake(key)
        if not self._push or sent:
            return
        if len(payload.encode("utf-8", "surrogatepass")) > MAX_PAYLOAD_BYTES:
            logger.debug("not pushing a %d-byte notification on %s", len(payload), channel)
            return
        self._pending.setdefault(channel, set()).add(payload)
        self._batch_opened.set()
        if channel in self._urgent:
            self._urgent_pending.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._batch_opened.wait()
            # The trailing window of ordinary payloads, cut short by an urgent one ...
            with trio.move_on_after(self._window):
                await self._urgent_pending.wait()
            # ... which still waits out the window of the last push: one batch per window.
            await trio.sleep_until(self._last_push + self._window)
            self._last_push = trio.current_time()
            await self.flush()

    async def flush(self) -> None:
        """Push every pending payload now (one statement per channel).

        Cancellation (shutdown) keeps what was not yet sent, so the final flush at close
        still pushes it.
        """
        pending, self._pending = self._pending, {}
        self._batch_opened = trio.Event()
        self._urgent_pending = trio.Event()
        try:
            while pending:
                channel, payloads = next(iter(pending.items()))
                await self._push_batch(channel, sorted(payloads))
                del pending[channel]
        finally:
            for channel, payloads in pending.items():
                self._pending.setdefault(channel, set()).update(payloads)

    async def _push_batch(self, channel: str, payloads: list[str]) -> None:
        try:
            await self._notify(channel, payloads)
            return
        except psycopg.Error as error:
            if len(payloads) == 1 or isinstance(
                map_error(error, self._pool.scrub), TransientDatabaseError
            ):
                self._report_dropped(channel, payloads, error)
                return
        for payload in payloads:
            try:
                await self._notify(channel, [payload])
            except psycopg.Error as error:
                self._report_dropped(channel, [payload], error)

    async def _notify(self, channel: str, payloads: list[str]) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                self._notify_sql, {"channel": channel, "payloads": payloads}, prepare=True
            )
        self.flushes += 1

    def _report_dropped(self, channel: str, payloads: list[str], error: psycopg.Error) -> None:
        # During an outage (reported once, by the retrier) this is expected.
        in_outage = self._retrier is not None and self._retrier.outage is not None
        logger.log(
            logging.DEBUG if in_outage else logging.WARNING,
            "dropping %d notifications on %s: %s",
            len(payloads),
            channel,
            map_error(error, self._pool.scrub),
        )
