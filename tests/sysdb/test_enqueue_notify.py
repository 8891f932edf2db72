"""A lone enqueue NOTIFYs its queue in its own statement (issue 34), on PostgreSQL.

On the notifier's leading edge (nothing pushed within the coalescing window, nothing
pending), ``init_workflow`` of a new ENQUEUED row carries the NOTIFY itself, delivered at
its commit: a worker in another process hears of the row without the round trip of a
separate push. Observed on a LISTEN connection of the test's own and by the notifier's
count of the push statements it sent (``flushes``): the first enqueue arrives with none
sent; one right after it, inside the window, goes through the notifier as before (one
statement per window); a row that already existed notifies nobody.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from dbos_trio._sysdb.open import BackendOptions, open_system_database
from dbos_trio._sysdb.postgres.backend import PostgresSystemDatabase
from dbos_trio._sysdb.wakeups import QUEUE_CHANNEL, queue_key

from support.sysdb_records import queued
from support.time_fixtures import NotifyWatcher
from support.waiting import HANG_GUARD, wait_until

pytestmark = pytest.mark.postgres_only_module("LISTEN/NOTIFY")

WINDOW = 600.0  # a coalescing window no test outlasts: the second enqueue falls in it


@pytest.fixture
async def db(system_database_url: str) -> AsyncIterator[PostgresSystemDatabase]:
    opened = await open_system_database(
        system_database_url, BackendOptions(notification_coalesce=WINDOW)
    )
    assert isinstance(opened, PostgresSystemDatabase)
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_lone_enqueue_notifies_in_its_own_statement(
    db: PostgresSystemDatabase, system_database_url: str
) -> None:
    async with NotifyWatcher.open(system_database_url, (QUEUE_CHANNEL,)) as watcher:
        with db.wakeups.subscribe(queue_key("q1")) as local:
            created = await db.init_workflow(queued("n-1", queue="q1"), None)
            assert created.created and local.woken  # and this process's worker at once
        with trio.fail_after(HANG_GUARD):
            await watcher.wait_for(QUEUE_CHANNEL, "q1")
        assert db.notifier.flushes == 0  # no push statement: the insert notified

        # Inside the window: the notifier's trailing batch carries it (one statement).
        await db.init_workflow(queued("n-2", queue="q2"), None)
        await watcher.quiet(0.2)
        assert watcher.on(QUEUE_CHANNEL, "q2") == []  # held for the window's end
        await db.notifier.flush()
        with trio.fail_after(HANG_GUARD):
            await watcher.wait_for(QUEUE_CHANNEL, "q2")
        await wait_until(lambda: db.notifier.flushes == 1, timeout=HANG_GUARD)
        assert len(watcher.on(QUEUE_CHANNEL, "q1")) == 1


async def test_a_row_that_existed_notifies_nobody(
    db: PostgresSystemDatabase, system_database_url: str
) -> None:
    await db.init_workflow(queued("e-1", queue="q3"), None)
    await db.notifier.flush()
    async with NotifyWatcher.open(system_database_url, (QUEUE_CHANNEL,)) as watcher:
        again = await db.init_workflow(queued("e-1", queue="q3", creator_xid="another"), None)
        assert not again.created
        await db.notifier.flush()
        await watcher.quiet(0.3)
        assert watcher.on(QUEUE_CHANNEL) == []
