"""The NOTIFY side: wake local waiters at once, push to other processes in batches.

Invariants, and why:

* After a write commits, local waiters are woken immediately (no round trip) and the
  payload is queued; the first payload of a batch opens a short coalescing window
  (10 ms by default), after which one ``pg_notify`` statement per channel pushes the
  whole batch. A NOTIFY inside the writing transaction would take PostgreSQL's global
  notify lock at commit and serialize every notifying commit; outside it costs one
  statement per window, whatever the write rate.
* Idle costs nothing: no timer runs without a pending payload.
* A failed batch is dropped, never retried: a notification is only a hint, and waiters
  re-check the database on their own interval anyway.
* With notifications off, payloads are not queued at all; local wakeups still happen.
* The final flush runs at shutdown, before the pool closes.
"""

from __future__ import annotations

import logging

import psycopg
import trio

from ..retry import Retrier
from ..wakeups import WakeupRegistry
from .pool import Pool

logger = logging.getLogger("dbos_trio.notifier")


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
    ) -> None:
        self._pool = pool
        self._wakeups = wakeups
        self._window = window
        self._push = push
        self._notify_sql = notify_sql
        self._retrier = retrier
        self._pending: dict[str, set[str]] = {}
        self._batch_opened = trio.Event()
        self.flushes = 0

    def publish(self, channel: str, payload: str, key: str) -> None:
        """A write on ``channel`` committed: wake ``key`` here, and push ``payload`` soon."""
        self._wakeups.wake(key)
        if not self._push:
            return
        self._pending.setdefault(channel, set()).add(payload)
        self._batch_opened.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._batch_opened.wait()
            await trio.sleep(self._window)
            await self.flush()

    async def flush(self) -> None:
        """Push every pending payload now (one statement per channel).

        Cancellation (shutdown) keeps what was not yet sent, so the final flush at close
        still pushes it.
        """
        pending, self._pending = self._pending, {}
        self._batch_opened = trio.Event()
        try:
            while pending:
                channel, payloads = next(iter(pending.items()))
                try:
                    async with self._pool.connection() as conn:
                        await conn.execute(
                            self._notify_sql,
                            {"channel": channel, "payloads": sorted(payloads)},
                            prepare=True,
                        )
                    self.flushes += 1
                except psycopg.Error as error:
                    # During an outage (reported once, by the retrier) this is expected.
                    in_outage = self._retrier is not None and self._retrier.outage is not None
                    logger.log(
                        logging.DEBUG if in_outage else logging.WARNING,
                        "dropping %d notifications on %s: %s",
                        len(payloads),
                        channel,
                        self._pool.scrub(error),
                    )
                del pending[channel]
        finally:
            for channel, payloads in pending.items():
                self._pending.setdefault(channel, set()).update(payloads)
