"""Helpers for the tests of time and communication: sleep, timeouts, messages, events,
streams and the LISTEN/NOTIFY wakeups.

* ``db_url`` / ``new_dbos``: one migrated database per test *module* and backend (the
  ``module_database_url`` fixture of :mod:`support.backends`: each backend in turn), and
  per test a :class:`DBOS` with an application name, version and executor id of its own.
  Recovery, the timeout sweep and dequeueing are all scoped by those, so tests sharing the
  database never touch each other's rows, and no test pays for creating and dropping a
  database. (``dbos_url``/``make_dbos`` of :mod:`support.dbos_fixtures` give a test a
  database of its own.)
* ``notify``: a fixture parametrized over both notification modes, so every test that
  asks for it runs once with ``use_listen_notify=True`` and once with ``False``. SQLite
  has no LISTEN (the setting is ignored there), so its ``notify`` run is skipped: the
  ``poll`` run covers that backend.
* :func:`launch`: a launched :class:`DBOS` on the test's database in the given mode.
* :func:`waiting_on` / :func:`wait_for_waiter`: whether (and when) someone in an executor
  is subscribed to a wakeup key, i.e. is blocked in ``recv``/``get_event``/``read_stream``.
* :class:`NotifyWatcher` (PostgreSQL only): a LISTEN connection of the test's own,
  recording every NOTIFY the server delivers on the DBOS channels (what other processes
  would see).
* :func:`listener_backend_pid` (PostgreSQL only): the server process of an executor's
  LISTEN connection, found in ``pg_stat_activity`` as a stranger would (not through the
  library).
* :class:`Stopwatch`: real elapsed seconds (tests measure real latency; the library
  itself never reads the wall clock outside ``_clock.py``).
* ``glacial_polling``: waiters re-check the database only every :data:`GLACIAL_RECHECK`
  seconds, so a waiter that returns within :data:`support.waiting.HANG_GUARD` was woken
  (by a write in this process or a NOTIFY), never found by its poll: how a test tells
  the mechanisms apart without bounding real time.
* ``sleep_targets``: every epoch time an executor's clock is asked to sleep until (a
  durable sleep waits there for its recorded wake time), in call order: what a durable
  sleep waited for, observed instead of timed.
* ``wakeup_waits``: every wait of a waiter (``recv``, ``get_event``, ...) on its wakeup
  subscription, as ``(key, timeout)``, in call order: whether a call waited at all.
* ``woken_waits``: the keys of the waits that ended because something woke them (a
  write in this executor, or its listener's NOTIFY), not because their time was up.

The fixtures are registered by ``tests/conftest.py``; the row helpers (``query``,
``status_row``, ...) are :mod:`support.backends`'.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest
import trio

from dbos_trio import DBOS, Config
from dbos_trio._clock import Clock
from dbos_trio._engine.state import Executor
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._sysdb.postgres.backend import PostgresSystemDatabase
from dbos_trio._sysdb.sqlite.backend import SQLiteSystemDatabase
from dbos_trio._sysdb.wakeups import Subscription
from dbos_trio.testing import launched as testing_launched

from support.backends import connected, query
from support.waiting import HANG_GUARD, wait_until

CHANNELS = ("dbos_notifications_channel", "dbos_workflow_events_channel", "dbos_streams_channel")

GLACIAL_RECHECK = 10 * HANG_GUARD
"""Seconds between a waiter's looks at the database under ``glacial_polling``."""


def make_polling_glacial(monkeypatch: pytest.MonkeyPatch) -> float:
    """Waiters (``recv``, ``get_event``, a durable wait) on either backend re-check the
    database only every :data:`GLACIAL_RECHECK` seconds instead of every second (or 60 s
    with notifications): one that returns within the hang guard was woken. Returns the
    interval."""
    for backend in (PostgresSystemDatabase, SQLiteSystemDatabase):
        monkeypatch.setattr(backend, "recheck_interval", property(lambda _: GLACIAL_RECHECK))
    return GLACIAL_RECHECK


@pytest.fixture
def glacial_polling(monkeypatch: pytest.MonkeyPatch) -> float:
    """:func:`make_polling_glacial` for the test."""
    return make_polling_glacial(monkeypatch)


@pytest.fixture(scope="module")
def db_url(module_database_url: str) -> str:
    """A migrated database shared by the tests of one module, as a URL."""
    return module_database_url


@pytest.fixture
def new_dbos(db_url: str) -> Callable[..., DBOS]:
    """``new_dbos(**config)``: a DBOS on the module's database, as an application of this
    test's own (name, version and executor id unique to the test)."""
    app_name = f"t5-{uuid.uuid4().hex[:12]}"

    def make(**overrides: Any) -> DBOS:
        settings: dict[str, Any] = {
            "app_name": app_name,
            "database_url": db_url,
            "app_version": "v-" + app_name,
            "executor_id": "x-" + app_name,
        }
        settings.update(overrides)
        return DBOS(Config(**settings))

    return make


LISTEN_NOTIFY = pytest.mark.postgres_only("LISTEN/NOTIFY (SQLite always polls: see the poll run)")


@pytest.fixture(
    params=[pytest.param(True, id="notify", marks=LISTEN_NOTIFY), pytest.param(False, id="poll")]
)
def notify(request: pytest.FixtureRequest) -> bool:
    """``use_listen_notify`` for this run of the test: both modes, one run each (on
    SQLite, which ignores the setting, only the polling run)."""
    value: bool = request.param
    return value


@pytest.fixture
def sleep_targets(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The epoch times passed to ``Clock.sleep_until`` during the test, in call order."""
    targets: list[float] = []
    original = Clock.sleep_until

    async def recording(self: Clock, epoch_seconds: float) -> None:
        targets.append(epoch_seconds)
        await original(self, epoch_seconds)

    monkeypatch.setattr(Clock, "sleep_until", recording)
    return targets


@pytest.fixture
def wakeup_waits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float]]:
    """``(key, timeout)`` of every ``Subscription.wait`` during the test, in call order."""
    waits: list[tuple[str, float]] = []
    original = Subscription.wait

    async def recording(self: Subscription, timeout: float) -> bool:
        waits.append((self.key, timeout))
        return await original(self, timeout)

    monkeypatch.setattr(Subscription, "wait", recording)
    return waits


@pytest.fixture
def woken_waits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The key of every ``Subscription.wait`` during the test that returned woken."""
    woken: list[str] = []
    original = Subscription.wait

    async def recording(self: Subscription, timeout: float) -> bool:
        was_woken = await original(self, timeout)
        if was_woken:
            woken.append(self.key)
        return was_woken

    monkeypatch.setattr(Subscription, "wait", recording)
    return woken


async def until_waiting(waits: list[tuple[str, float]], key: str) -> None:
    """Return once a waiter on ``key`` has begun a wait (recorded by ``wakeup_waits``):
    it has looked once, found nothing and set its deadline, so what it finds from now on
    was delivered by what the test is about (a wakeup, or a re-check)."""
    await wait_until(lambda: any(k == key for k, _ in waits), timeout=HANG_GUARD)


@asynccontextmanager
async def launch(make: Callable[..., DBOS], notify: bool, **config: Any) -> AsyncIterator[DBOS]:
    """``make(use_listen_notify=notify, **config)``, launched for the block.

    With notifications on, the block starts once the listener's self-test came back, so
    waiters in the test use the long (notification-driven) re-check interval from the
    start and a prompt wakeup can only have come from a notification.
    """
    async with running(make(use_listen_notify=notify, **config)) as dbos:
        yield dbos


@asynccontextmanager
async def running(dbos: DBOS, *, sweeps_every: float | None = None) -> AsyncIterator[DBOS]:
    """``dbos.launched()``, entered once its listener (if any) passed its self-test.

    ``sweeps_every`` spaces the executor's background sweeps (timeout, dequeue, orphan and
    cancel sweeps) that many seconds apart, as ``dbos_trio.testing.launched`` does: with
    :data:`GLACIAL_RECHECK`, nothing a sweep would do happens within the hang guard.
    """
    launching = (
        dbos.launched()
        if sweeps_every is None
        else testing_launched(dbos, background_interval=sweeps_every)
    )
    async with launching:
        sysdb = executor_of(dbos).sysdb
        listener = sysdb.listener if isinstance(sysdb, PostgresSystemDatabase) else None
        if listener is not None:
            await wait_until(lambda: listener.delivering, timeout=10)
        yield dbos


def executor_of(dbos: DBOS) -> Executor:
    return dbos._require_executor("a test looking inside")


def postgres_backend(dbos: DBOS) -> PostgresSystemDatabase:
    sysdb = executor_of(dbos).sysdb
    assert isinstance(sysdb, PostgresSystemDatabase)
    return sysdb


def waiting_on(dbos: DBOS, key: str) -> bool:
    """Whether someone in ``dbos``'s executor is subscribed to the wakeup ``key``."""
    waited_on = executor_of(dbos).wakeups.keys()
    return key in waited_on


async def wait_for_waiter(dbos: DBOS, key: str, *, timeout: float = 10.0) -> None:
    """Return once a waiter is subscribed to ``key`` (the wait has begun)."""
    await wait_until(lambda: waiting_on(dbos, key), timeout=timeout)


async def listener_backend_pid(url: str) -> int:
    """The server pid of the (single) connection LISTENing on this test's database."""
    rows: list[tuple[Any, ...]] = []

    async def found() -> bool:
        nonlocal rows
        rows = await query(
            url,
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND query LIKE 'LISTEN%%' AND pid <> pg_backend_pid()",
        )
        return len(rows) == 1

    await wait_until(found, timeout=10)
    return int(rows[0][0])


@attrs.frozen
class Notice:
    channel: str
    payload: str
    at: float  # time.monotonic() when it reached the watcher


class NotifyWatcher:
    """LISTENs on the DBOS channels (or ``channels``) on a connection of the test's own,
    in a task."""

    def __init__(self, conn: TrioConnection) -> None:
        self._conn = conn
        self.received: list[Notice] = []
        self._changed = trio.Event()

    @classmethod
    @asynccontextmanager
    async def open(
        cls, url: str, channels: tuple[str, ...] = CHANNELS
    ) -> AsyncIterator[NotifyWatcher]:
        async with connected(url) as conn:
            for channel in channels:
                await conn.execute(f"LISTEN {channel}", prepare=False)
            watcher = cls(conn)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watcher._collect)
                try:
                    yield watcher
                finally:
                    nursery.cancel_scope.cancel()

    async def _collect(self) -> None:
        async for notification in self._conn.notifications():
            self.received.append(
                Notice(notification.channel, notification.payload, time.monotonic())
            )
            self._changed.set()
            self._changed = trio.Event()

    def on(self, channel: str, payload: str | None = None) -> list[Notice]:
        return [
            n
            for n in self.received
            if n.channel == channel and (payload is None or n.payload == payload)
        ]

    async def wait_for(
        self, channel: str, payload: str | None = None, *, timeout: float = 5.0
    ) -> Notice:
        with trio.fail_after(timeout):
            while not self.on(channel, payload):
                await self._changed.wait()
        return self.on(channel, payload)[0]

    async def quiet(self, seconds: float) -> None:
        """Let ``seconds`` pass so that late notifications have a chance to arrive."""
        await trio.sleep(seconds)


class Stopwatch:
    """Real seconds since construction (or the last :meth:`restart`)."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def restart(self) -> None:
        self.started = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.started
