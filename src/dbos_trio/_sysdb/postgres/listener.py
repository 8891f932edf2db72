"""The LISTEN side: one connection that turns NOTIFYs into wakeups.

Invariants, and why:

* One dedicated autocommit connection LISTENs on the three DBOS channels and dbos_trio's
  own (cancellations, enqueues, delayed rows; inside a transaction LISTEN would only take
  effect at commit). Each notification wakes the key
  ``prefix + payload``; the payload is never split.
* NOTIFY is not queued for an absent listener, so after every (re)connect every waiter is
  woken to look at the database again; so is every waiter when a delivering connection is
  lost, so that none sits out a long wait that no notification will end.
* Waiters may stretch their re-check interval to 60 s only once a self-test NOTIFY sent
  through the pool has come back on this connection (a transaction-mode PgBouncer, for
  one, silently drops LISTEN); until then, and after any failure, they re-check every 1 s.
  The same self-test checks that the migration-1 trigger that NOTIFYs receivers of
  messages exists: a database first migrated with ``use_listen_notify=False`` has none,
  and a receiver there must keep re-checking every second.
* A self-test that does not come back is said, once, at WARNING, with what to set: LISTEN
  through a transaction-mode pooler is accepted and never delivers, and a user would
  otherwise only see every wait run on 1 s polling. Such a connection is then re-made only
  every :data:`UNDELIVERED_RECONNECT_SECONDS`, not every second, so as not to flood the
  pooler (and its log) with LISTENs.
* What it logs about a failure is scrubbed with the pool's scrubber (the secrets of the
  URLs it connects with): a connection error's text may quote a password.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import psycopg
import trio

from dbos_trio._clock import real_time_limit
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._pg.pool import Pool
from dbos_trio._sysdb.errors import ConnectionLost
from dbos_trio._sysdb.retry import Retrier
from dbos_trio._sysdb.wakeups import (
    CANCEL_CHANNEL,
    CANCELS,
    DELAYED,
    DELAYED_CHANNEL,
    EVENTS,
    MESSAGES,
    QUEUE_CHANNEL,
    QUEUES,
    STREAMS,
    WakeupRegistry,
)

logger = logging.getLogger("dbos_trio.listener")

CHANNEL_PREFIXES = {
    "dbos_notifications_channel": MESSAGES,
    "dbos_workflow_events_channel": EVENTS,
    "dbos_streams_channel": STREAMS,
    CANCEL_CHANNEL: CANCELS,
    QUEUE_CHANNEL: QUEUES,
    DELAYED_CHANNEL: DELAYED,
}
SELF_TEST_CHANNEL = "dbos_notifications_channel"
SELF_TEST_PAYLOAD = "dbos_listen_selftest"
SELF_TEST_SECONDS = 3.0
# Sends the self-test NOTIFY and says whether messages will be NOTIFYed too (the trigger
# exists, in the given schema, or in any when none is given), in one statement.
SELF_TEST_SQL = """
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_trigger AS t
    JOIN pg_catalog.pg_class AS c ON c.oid = t.tgrelid
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE t.tgname = 'dbos_notifications_trigger' AND c.relname = 'notifications'
      AND (%(schema)s::text IS NULL OR n.nspname = %(schema)s)
)
FROM (SELECT pg_notify(%(channel)s, %(payload)s)) AS sent
"""
RECONNECT_SECONDS = 1.0
# After a LISTEN that never delivered: how long before trying again.
UNDELIVERED_RECONNECT_SECONDS = 60.0
DELIVERING_RECHECK_SECONDS = 60.0
POLLING_RECHECK_SECONDS = 1.0


def key_for(channel: str, payload: str) -> str | None:
    prefix = CHANNEL_PREFIXES.get(channel)
    return None if prefix is None else prefix + payload


class Listener:
    """LISTENs for the executor's lifetime; ``delivering`` once its self-test came back."""

    def __init__(
        self,
        pool: Pool,
        wakeups: WakeupRegistry,
        *,
        schema: str | None = None,
        connect: Callable[[], Awaitable[TrioConnection]] | None = None,
        retrier: Retrier | None = None,
    ) -> None:
        self._pool = pool
        # LISTEN needs a session of its own: a direct connection when the pool goes
        # through a transaction-pooling proxy.
        self._connect = connect or (lambda: pool.new_connection(autocommit=True))
        self._retrier = retrier
        self._wakeups = wakeups
        self._schema = schema
        self._heard_self_test = False
        self._self_test_heard = trio.Event()
        self._undelivered = False  # the last self-test never came back
        self._warned_undelivered = False
        self._messages_notified = False
        self.connections = 0  # how many times LISTEN was (re)established
        self.backend_pid: int | None = None  # the listening connection's server process

    @property
    def delivering(self) -> bool:
        """Whether notifications (messages included) are known to reach this connection."""
        return self._heard_self_test and self._messages_notified

    @property
    def recheck_interval(self) -> float:
        return DELIVERING_RECHECK_SECONDS if self.delivering else POLLING_RECHECK_SECONDS

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """LISTEN until cancelled, reconnecting after failures; started once first connected
        (or once the first attempt failed, so launch never waits on a broken listener)."""
        started = False

        def report_started() -> None:
            nonlocal started
            if not started:
                started = True
                task_status.started()

        while True:
            try:
                await self._listen_once(report_started)
            except psycopg.Error as error:
                self._lost(error)
            finally:
                was_delivering = self.delivering
                self._heard_self_test = False
                self.backend_pid = None
            if was_delivering:
                # Waiters may be in a long (notification-driven) wait: make them look now
                # and go on with the short interval until LISTEN works again.
                self._wakeups.wake_all()
            report_started()
            pause = UNDELIVERED_RECONNECT_SECONDS if self._undelivered else RECONNECT_SECONDS
            await trio.sleep(pause)

    async def _listen_once(self, report_started: Callable[[], None]) -> None:
        conn = await self._connect()
        try:
            for channel in CHANNEL_PREFIXES:
                await conn.execute(f"LISTEN {channel}")
            self.connections += 1
            self.backend_pid = conn.info.backend_pid
            if self._retrier is not None:
                self._retrier.succeeded()
            # NOTIFYs sent while nobody listened are gone: everyone looks again.
            self._wakeups.wake_all()
            lost: psycopg.Error = psycopg.OperationalError("the LISTEN connection closed")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._self_test)
                report_started()
                # Caught here, not by the caller: out of the nursery it would come wrapped in
                # an exception group.
                try:
                    await self._deliver(conn)
                except psycopg.Error as error:
                    lost = error
                nursery.cancel_scope.cancel()
            raise lost
        finally:
            with trio.CancelScope(shield=True):
                await conn.close()

    def _lost(self, error: psycopg.Error) -> None:
        """The LISTEN connection failed: part of an outage of the database (logged once by
        the retrier), or, without one, a warning of its own."""
        text = self._pool.scrub(error)
        if self._retrier is None:
            logger.warning("listener connection lost (%s): reconnecting", text)
            return
        if self._retrier.outage is None and not isinstance(error, psycopg.OperationalError):
            logger.warning("listener connection lost (%s): reconnecting", text)
            return
        self._retrier.lost(ConnectionLost(f"LISTEN connection lost: {text}"))
        logger.debug("listener connection lost (%s): reconnecting", text)

    async def _deliver(self, conn: TrioConnection) -> None:
        """Turn each notification into a wakeup until the connection fails."""
        async for notification in conn.notifications():
            if (
                notification.channel == SELF_TEST_CHANNEL
                and notification.payload == SELF_TEST_PAYLOAD
            ):
                self._heard_self_test = True
                self._self_test_heard.set()
                continue
            key = key_for(notification.channel, notification.payload)
            if key is not None:
                self._wakeups.wake(key)

    async def _self_test(self) -> None:
        self._self_test_heard = trio.Event()
        if not await self._send_self_test():
            return
        with real_time_limit(SELF_TEST_SECONDS):
            await self._self_test_heard.wait()
        self._undelivered = not self._heard_self_test
        if self._undelivered and not self._warned_undelivered:
            self._warned_undelivered = True
            logger.warning(
                "LISTEN does not deliver notifications on this connection (a self-test "
                "NOTIFY never came back in %g s; a transaction-mode pooler such as PgBouncer "
                "accepts LISTEN and drops it): every wait re-checks the database every %g s "
                "instead. Set Config(direct_database_url=<PostgreSQL's own URL>) so LISTEN "
                "goes straight to the server, or Config(use_listen_notify=False) to stop "
                "trying (docs/concepts/executors.md)",
                SELF_TEST_SECONDS,
                POLLING_RECHECK_SECONDS,
            )

    async def _send_self_test(self) -> bool:
        """Send the self-test NOTIFY and note whether messages are NOTIFYed; whether sent."""
        row = None
        with real_time_limit(SELF_TEST_SECONDS) as limit:
            try:
                async with self._pool.connection() as conn:
                    cur = await conn.execute(
                        SELF_TEST_SQL,
                        {
                            "schema": self._schema,
                            "channel": SELF_TEST_CHANNEL,
                            "payload": SELF_TEST_PAYLOAD,
                        },
                    )
                    row = await cur.fetchone()
            except psycopg.Error as error:
                logger.warning("listener self-test could not be sent: %s", self._pool.scrub(error))
                return False
        if limit.cancelled_caught:
            logger.warning("listener self-test got no answer in %g s", SELF_TEST_SECONDS)
            return False
        if row is not None:
            self._messages_notified = bool(row[0])
            if not self._messages_notified:
                logger.warning(
                    "no dbos_notifications_trigger on the notifications table (the database "
                    "was migrated with use_listen_notify=False): waits re-check every %g s",
                    POLLING_RECHECK_SECONDS,
                )
        return True
