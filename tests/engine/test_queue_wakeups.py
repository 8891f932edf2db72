"""Wake-ups across processes: a worker learns of work another dbos_trio process enqueued
from a NOTIFY on the queue channel, not from its polling interval.

The worker's queue is polled once an hour and the executor's background sweeps run ten
minutes apart (``running(..., sweeps_every=GLACIAL_RECHECK)``; the polled tests keep the
engine's own sweeps, as pacing the sweeps paces queue polling too): within the hang
guard, only a notification can start the work, and the wait it ended is recorded as woken
(``woken_waits``). The writer is a :class:`~dbos_trio.Client` — a runtime of its own, with
its own pool and wakeup registry — so nothing in-process can wake the worker. Rows written
the way other SDKs write them (a plain INSERT, no NOTIFY) are still found by polling.

PostgreSQL only (``postgres_only_module``): SQLite has no LISTEN/NOTIFY; its executors in
one process share wakeups, and others poll.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import psycopg
import pytest
import trio

from dbos_trio import DBOS, Client, EnqueueOptions
from dbos_trio._engine.runtime.dequeue import sweep_wait
from dbos_trio._sysdb.postgres import listener
from dbos_trio._sysdb.wakeups import (
    DELAYED_CHANNEL,
    QUEUE_CHANNEL,
    delayed_key,
    enqueue_announcement,
    queue_key,
)

from support.backends import query
from support.time_fixtures import (
    GLACIAL_RECHECK,
    NotifyWatcher,
    executor_of,
    running,
    until_waiting,
)
from support.waiting import HANG_GUARD, wait_until

pytestmark = pytest.mark.postgres_only_module("LISTEN/NOTIFY between processes")

HOURLY = 3600.0
QUEUE_CHANNELS = (QUEUE_CHANNEL, DELAYED_CHANNEL)


@pytest.fixture
def notified(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every wakeup key a listener turned a NOTIFY into during the test, in order."""
    keys: list[str] = []
    original = listener.key_for

    def recording(channel: str, payload: str) -> str | None:
        key = original(channel, payload)
        if key is not None:
            keys.append(key)
        return key

    monkeypatch.setattr(listener, "key_for", recording)
    return keys


def test_an_enqueue_announces_its_queue_and_a_delayed_row_the_supervisor() -> None:
    assert enqueue_announcement("q", "ENQUEUED") == (queue_key("q"), QUEUE_CHANNEL, "q")
    assert enqueue_announcement("q", "DELAYED") == (delayed_key(), DELAYED_CHANNEL, "")
    assert enqueue_announcement("q", "PENDING") is None


def test_the_supervisor_sweeps_again_when_the_first_delay_comes_due() -> None:
    assert sweep_wait(1.0, None, 5_000) == 1.0
    assert sweep_wait(1.0, 5_300, 5_000) == pytest.approx(0.301)
    assert sweep_wait(1.0, 9_000, 5_000) == 1.0  # never later than the sweep interval
    assert sweep_wait(600.0, 4_000, 5_000) == 0.0  # already due


async def waiting_afresh(
    dbos: DBOS, waits: list[tuple[str, float]], woken: list[str], key: str
) -> int:
    """Once the waiter on ``key`` is in a wait begun after launch settled, the number of
    times it was woken so far. The listener's connect wakes every waiter, and a first wait
    woken so could claim again late, after the test's enqueue: so the waiter is woken once
    here and seen to claim and wait again."""
    await until_waiting(waits, key)
    before = sum(1 for k, _ in waits if k == key)
    executor_of(dbos).wakeups.wake(key)
    await wait_until(lambda: sum(1 for k, _ in waits if k == key) > before, timeout=HANG_GUARD)
    return woken.count(key)


def worker(
    new_dbos: Callable[..., DBOS], queue: str, woken: list[str], *, polling: float = HOURLY
) -> tuple[DBOS, list[int]]:
    """An executor serving ``queue`` (polled every ``polling`` seconds), and, per run of
    its workflow, how many times its worker had been woken by then (a slot freed at the
    end of a run wakes it too, so it is counted in the body, before that)."""
    dbos = new_dbos(use_listen_notify=True)
    dbos.register_queue(queue, polling_interval_sec=polling)
    woken_before_start: list[int] = []

    @dbos.workflow(name="wake.double")
    async def double(x: int) -> int:
        woken_before_start.append(woken.count(queue_key(queue)))
        return 2 * x

    return dbos, woken_before_start


async def test_a_client_enqueue_wakes_a_worker_that_polls_hourly(
    new_dbos: Callable[..., DBOS],
    db_url: str,
    wakeup_waits: list[tuple[str, float]],
    woken_waits: list[str],
    notified: list[str],
) -> None:
    queue = f"wq-{uuid.uuid4().hex[:8]}"
    dbos, woken_before_start = worker(new_dbos, queue, woken_waits)
    async with (
        running(dbos, sweeps_every=GLACIAL_RECHECK),
        Client(db_url, app_name=dbos.config.app_name) as client,
    ):
        # The worker's first claim found nothing; its next poll is an hour away.
        woken = await waiting_afresh(dbos, wakeup_waits, woken_waits, queue_key(queue))
        handle = await client.enqueue(
            EnqueueOptions(workflow_name="wake.double", queue_name=queue), 21
        )
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == 42
        assert woken_before_start[0] > woken
        assert queue_key(queue) in notified  # woken by the listener, from the NOTIFY


async def test_an_enqueue_in_the_callers_transaction_notifies_at_commit_and_never_on_rollback(
    new_dbos: Callable[..., DBOS],
    db_url: str,
    wakeup_waits: list[tuple[str, float]],
    woken_waits: list[str],
    notified: list[str],
) -> None:
    queue = f"wq-{uuid.uuid4().hex[:8]}"
    dbos, woken_before_start = worker(new_dbos, queue, woken_waits)
    options = EnqueueOptions(workflow_name="wake.double", queue_name=queue)
    async with (
        NotifyWatcher.open(db_url, QUEUE_CHANNELS) as watcher,
        running(dbos, sweeps_every=GLACIAL_RECHECK),
        Client(db_url, app_name=dbos.config.app_name) as client,
    ):
        woken = await waiting_afresh(dbos, wakeup_waits, woken_waits, queue_key(queue))
        with psycopg.connect(db_url) as conn:  # not autocommit: a transaction is open
            await client.enqueue_in_transaction(conn, options, 1)
            conn.rollback()
            handle = await client.enqueue_in_transaction(conn, options, 5)
            await watcher.quiet(0.2)
            assert watcher.on(QUEUE_CHANNEL) == []  # neither the rolled-back nor the open one
            conn.commit()
        await watcher.wait_for(QUEUE_CHANNEL, queue, timeout=HANG_GUARD)
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == 10
        assert woken_before_start[0] > woken
        assert queue_key(queue) in notified
        assert len(watcher.on(QUEUE_CHANNEL)) == 1


async def test_a_delayed_enqueue_from_another_process_starts_at_its_time_not_at_a_sweep(
    new_dbos: Callable[..., DBOS],
    db_url: str,
    wakeup_waits: list[tuple[str, float]],
    woken_waits: list[str],
    notified: list[str],
) -> None:
    queue = f"wq-{uuid.uuid4().hex[:8]}"
    dbos, woken_before_start = worker(new_dbos, queue, woken_waits)
    async with (
        running(dbos, sweeps_every=GLACIAL_RECHECK),
        Client(db_url, app_name=dbos.config.app_name) as client,
    ):
        await until_waiting(wakeup_waits, delayed_key())
        woken = await waiting_afresh(dbos, wakeup_waits, woken_waits, queue_key(queue))
        options = EnqueueOptions(workflow_name="wake.double", queue_name=queue, delay_seconds=0.3)
        handle = await client.enqueue(options, 4)
        # Sweeps are ten minutes apart: the NOTIFY makes the supervisor read the row's
        # time, and it releases the row then.
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == 8
        assert delayed_key() in woken_waits
        assert delayed_key() in notified  # the supervisor learnt of the row by NOTIFY
        assert woken_before_start[0] > woken  # by the release, at the row's time
        waits = [timeout for key, timeout in wakeup_waits if key == delayed_key()]
        assert any(0 < timeout < 1 for timeout in waits)  # a wait until the row's time


async def test_rows_written_as_other_sdks_write_them_are_found_by_polling(
    new_dbos: Callable[..., DBOS],
    db_url: str,
    wakeup_waits: list[tuple[str, float]],
    woken_waits: list[str],
) -> None:
    queue = f"wq-{uuid.uuid4().hex[:8]}"
    dbos, woken_before_start = worker(new_dbos, queue, woken_waits, polling=0.2)
    async with running(dbos):
        woken = await waiting_afresh(dbos, wakeup_waits, woken_waits, queue_key(queue))
        # The official SDK's enqueue: the schema's own enqueue_workflow, no NOTIFY.
        await query(
            db_url,
            "SELECT {t}enqueue_workflow('wake.double', %s, ARRAY['6'::json], '{{}}'::json, "
            "workflow_id => %s, application_name => %s)",
            queue,
            "official-row-" + queue,
            dbos.config.app_name,
        )
        with trio.fail_after(HANG_GUARD):
            handle = await dbos.retrieve_workflow("official-row-" + queue)
            assert await handle.get_result() == 12
    assert woken_before_start == [woken]  # found by its poll: nothing woke it


async def test_a_client_with_notifications_off_sends_nothing_and_its_rows_are_polled(
    new_dbos: Callable[..., DBOS],
    db_url: str,
    wakeup_waits: list[tuple[str, float]],
    woken_waits: list[str],
) -> None:
    queue = f"wq-{uuid.uuid4().hex[:8]}"
    dbos, woken_before_start = worker(new_dbos, queue, woken_waits, polling=0.2)
    options = EnqueueOptions(workflow_name="wake.double", queue_name=queue)
    async with (
        NotifyWatcher.open(db_url, QUEUE_CHANNELS) as watcher,
        running(dbos),
        Client(db_url, app_name=dbos.config.app_name, use_listen_notify=False) as client,
    ):
        woken = await waiting_afresh(dbos, wakeup_waits, woken_waits, queue_key(queue))
        handle = await client.enqueue(options, 3)
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == 6
        assert watcher.on(QUEUE_CHANNEL) == []
    assert woken_before_start == [woken]
