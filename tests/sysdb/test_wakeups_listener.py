"""The LISTEN listener and the coalescing NOTIFY notifier, against a real server.

What other processes see is observed on a LISTEN connection of the test's own
(:class:`NotifyWatcher`); what the listener does is observed through the waiters it wakes.
The reconnect test kills the listener's server process with ``pg_terminate_backend``,
found in ``pg_stat_activity`` as any operator would find it.

PostgreSQL only (``postgres_only_module``): LISTEN/NOTIFY, its triggers and
``pg_terminate_backend`` do not exist on SQLite, whose waiters always poll.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, SetWorkflowID
from dbos_trio._pg.pool import Pool
from dbos_trio._sysdb.postgres.backend import statement_text
from dbos_trio._sysdb.postgres.listener import (
    DELIVERING_RECHECK_SECONDS,
    POLLING_RECHECK_SECONDS,
    key_for,
)
from dbos_trio._sysdb.postgres.notifier import MAX_PAYLOAD_BYTES, Notifier
from dbos_trio._sysdb.wakeups import WakeupRegistry, event_key, message_key, stream_key

from support.backends import execute, query
from support.time_fixtures import (
    NotifyWatcher,
    listener_backend_pid,
    postgres_backend,
    running,
    until_waiting,
    wait_for_waiter,
)
from support.waiting import HANG_GUARD, wait_until

pytestmark = pytest.mark.postgres_only_module(
    "LISTEN/NOTIFY, its triggers and pg_terminate_backend"
)


EVENTS = "dbos_workflow_events_channel"
STREAMS = "dbos_streams_channel"
MESSAGES = "dbos_notifications_channel"


def test_channels_map_to_prefixed_keys_and_payloads_are_never_split() -> None:
    assert key_for(MESSAGES, "wf::topic") == message_key("wf", "topic")
    assert key_for(EVENTS, "a::b::c") == event_key("a::b", "c") == event_key("a", "b::c")
    assert key_for(STREAMS, "wf::s") == stream_key("wf", "s")
    assert key_for("some_other_channel", "wf::k") is None


async def test_waiters_stretch_their_recheck_only_once_the_self_test_came_back(
    new_dbos: Callable[..., DBOS],
) -> None:
    async with running(new_dbos(use_listen_notify=True)) as dbos:
        listener = postgres_backend(dbos).listener
        assert listener is not None and listener.delivering
        assert postgres_backend(dbos).recheck_interval == DELIVERING_RECHECK_SECONDS == 60.0
    async with running(new_dbos(use_listen_notify=False)) as dbos:
        assert postgres_backend(dbos).listener is None
        assert postgres_backend(dbos).recheck_interval == POLLING_RECHECK_SECONDS == 1.0


async def test_ids_and_keys_containing_colons_are_delivered_across_processes(
    new_dbos: Callable[..., DBOS], glacial_polling: float
) -> None:
    writer = new_dbos(executor_id="writer")
    reader = new_dbos(executor_id="reader")
    go = trio.Event()

    @writer.workflow()
    async def setter() -> None:
        await go.wait()
        await writer.set_event("c::d", "value")

    async with running(writer), running(reader):
        with SetWorkflowID("a::b"):
            handle = await writer.start_workflow(setter)
        got: list[Any] = []

        async def read() -> None:
            got.append(await reader.get_event("a::b", "c::d", timeout_seconds=glacial_polling))

        # The reader's next look is ten minutes away: only the NOTIFY wakes it in time.
        with trio.fail_after(HANG_GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                await wait_for_waiter(reader, event_key("a::b", "c::d"))
                await trio.sleep(0.1)
                go.set()
        assert got == ["value"]
        await handle.get_result()


async def test_after_its_backend_is_terminated_the_listener_wakes_waiters_and_delivers_again(
    new_dbos: Callable[..., DBOS], db_url: str, glacial_polling: float
) -> None:
    writer = new_dbos(executor_id="writer", use_listen_notify=True)
    reader = new_dbos(executor_id="reader", use_listen_notify=True)
    gates = {"k1": trio.Event(), "k2": trio.Event()}

    @writer.workflow()
    async def setter() -> None:
        for key, gate in gates.items():
            await gate.wait()
            await writer.set_event(key, key + "-value")

    async with running(writer), running(reader):
        listener = postgres_backend(reader).listener
        assert listener is not None and listener.connections == 1
        pid = listener.backend_pid
        assert pid is not None
        # What an operator sees: that process is LISTENing on our database.
        listening = await query(db_url, "SELECT query FROM pg_stat_activity WHERE pid = %s", pid)
        assert listening[0][0].startswith("LISTEN")

        handle = await writer.start_workflow(setter)
        got: dict[str, Any] = {}

        async def read(key: str) -> None:
            got[key] = await reader.get_event(
                handle.workflow_id, key, timeout_seconds=glacial_polling
            )

        # Waiters look at the database again only every ten minutes: within the guard,
        # only the listener (its loss and reconnect, or a NOTIFY) can wake them.
        with trio.fail_after(HANG_GUARD):
            async with trio.open_nursery() as nursery:
                # A waiter in a long, notification-driven wait ...
                nursery.start_soon(read, "k1")
                await wait_for_waiter(reader, event_key(handle.workflow_id, "k1"))
                await trio.sleep(0.1)
                # ... loses its listener; the value is set while nobody listens.
                assert await query(db_url, "SELECT pg_terminate_backend(%s)", pid) == [(True,)]
                await wait_until(lambda: not listener.delivering, timeout=HANG_GUARD)
                gates["k1"].set()
        assert got["k1"] == "k1-value"  # woken by the loss / the reconnect

        await wait_until(lambda: listener.delivering, timeout=HANG_GUARD)
        assert listener.connections == 2
        assert listener.backend_pid not in (None, pid)
        with trio.fail_after(HANG_GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read, "k2")
                await wait_for_waiter(reader, event_key(handle.workflow_id, "k2"))
                await trio.sleep(0.1)
                gates["k2"].set()
        assert got["k2"] == "k2-value"  # notifications arrive again
        await handle.get_result()


@asynccontextmanager
async def running_notifier(
    url: str, *, push: bool, window: float = 0.05
) -> AsyncIterator[tuple[Notifier, WakeupRegistry]]:
    pool = Pool(url, max_size=2)
    wakeups = WakeupRegistry()
    notifier = Notifier(
        pool, wakeups, window=window, push=push, notify_sql=statement_text("dbos", "notify_batch")
    )
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(notifier.run)
            try:
                yield notifier, wakeups
            finally:
                nursery.cancel_scope.cancel()
        await notifier.flush()
    finally:
        await pool.close()


async def test_the_notifier_coalesces_repeats_and_sends_one_batch_per_channel(
    db_url: str,
) -> None:
    async with (
        NotifyWatcher.open(db_url) as watcher,
        running_notifier(db_url, push=True) as (notifier, wakeups),
    ):
        assert notifier.flushes == 0
        with wakeups.subscribe(event_key("wf", "k")) as local:
            for _ in range(5):
                notifier.publish(EVENTS, "wf::k", event_key("wf", "k"))
            # Local waiters are woken at once, before anything reaches the server.
            assert local.woken
            assert notifier.flushes == 0
        notifier.publish(STREAMS, "wf::s", stream_key("wf", "s"))
        notifier.publish(EVENTS, "wf::k2", event_key("wf", "k2"))
        await watcher.wait_for(EVENTS, "wf::k2")
        await watcher.wait_for(STREAMS, "wf::s")
        await watcher.quiet(0.2)
        assert len(watcher.on(EVENTS, "wf::k")) == 1
        assert len(watcher.on(EVENTS)) == 2
        assert len(watcher.on(STREAMS)) == 1
        assert notifier.flushes == 2  # one statement per channel, one window

        # Idle costs nothing; the next write opens a new window.
        await trio.sleep(0.2)
        assert notifier.flushes == 2
        notifier.publish(EVENTS, "wf::k", event_key("wf", "k"))
        await wait_until(lambda: len(watcher.on(EVENTS, "wf::k")) == 2, timeout=HANG_GUARD)
        # Counted once the statement has returned and its connection is back in the pool,
        # which may be a moment after the server delivered the notification.
        await wait_until(lambda: notifier.flushes == 3, timeout=HANG_GUARD)


async def test_with_notifications_off_nothing_is_pushed_but_local_waiters_still_wake(
    db_url: str,
) -> None:
    async with (
        NotifyWatcher.open(db_url) as watcher,
        running_notifier(db_url, push=False) as (notifier, wakeups),
    ):
        with wakeups.subscribe(stream_key("wf", "s")) as local:
            notifier.publish(STREAMS, "wf::s", stream_key("wf", "s"))
            assert local.woken
        await watcher.quiet(0.3)
        assert watcher.received == []
        assert notifier.flushes == 0


async def test_an_oversized_payload_is_never_queued_and_costs_no_other_its_notification(
    db_url: str,
) -> None:
    largest = "x" * MAX_PAYLOAD_BYTES
    too_long = "y" * (MAX_PAYLOAD_BYTES + 1)  # PostgreSQL refuses 8000 bytes and more
    async with (
        NotifyWatcher.open(db_url) as watcher,
        running_notifier(db_url, push=True) as (notifier, wakeups),
    ):
        with wakeups.subscribe(event_key(too_long, "")) as local:
            notifier.publish(EVENTS, too_long, event_key(too_long, ""))
            assert local.woken  # waiters in this process are woken all the same
        assert notifier._pending == {}
        notifier.publish(EVENTS, largest, event_key(largest, ""))
        notifier.publish(EVENTS, "wf::k", event_key("wf", "k"))
        await watcher.wait_for(EVENTS, "wf::k")
        await watcher.wait_for(EVENTS, largest)
        await wait_until(
            lambda: notifier.flushes == 1, timeout=HANG_GUARD
        )  # one statement for both
        assert watcher.on(EVENTS, too_long) == []


async def test_a_batch_the_server_refuses_is_sent_again_payload_by_payload(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        NotifyWatcher.open(db_url) as watcher,
        running_notifier(db_url, push=True) as (notifier, _),
    ):
        # A NUL cannot be sent in text: the batch statement fails, then only that payload.
        notifier.publish(EVENTS, "bad\x00payload", event_key("bad", ""))
        notifier.publish(EVENTS, "wf::k", event_key("wf", "k"))
        await watcher.wait_for(EVENTS, "wf::k")
        # Sorted, the bad payload went first: once the good one is counted, both were tried.
        await wait_until(lambda: notifier.flushes == 1, timeout=HANG_GUARD)
        assert [n.payload for n in watcher.received] == ["wf::k"]
    dropped = [r.getMessage() for r in caplog.records if "dropping" in r.getMessage()]
    assert len(dropped) == 1 and dropped[0].startswith("dropping 1 notifications")


async def test_pending_notifications_are_flushed_at_shutdown_before_the_pool_closes(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    # A window far longer than the test: only the final flush can push the event.
    dbos = new_dbos(use_listen_notify=True, notification_coalesce=30.0)

    @dbos.workflow()
    async def setter() -> None:
        await dbos.set_event("k", "v")

    async with NotifyWatcher.open(db_url) as watcher:
        async with running(dbos):
            handle = await dbos.start_workflow(setter)
            await handle.get_result()
            await watcher.quiet(0.2)
            assert watcher.on(EVENTS) == []
        await watcher.wait_for(EVENTS, f"{handle.workflow_id}::k")


async def test_messages_are_notified_by_the_trigger_and_events_and_streams_by_the_notifier(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos(use_listen_notify=True)

    @dbos.workflow()
    async def writer() -> None:
        await dbos.set_event("k", 1)
        await dbos.write_stream("s", 1)
        await dbos.recv("t", timeout_seconds=5)

    async with NotifyWatcher.open(db_url) as watcher, running(dbos):
        handle = await dbos.start_workflow(writer)
        await dbos.send(handle.workflow_id, "m", "t")
        await handle.get_result()
        wf = handle.workflow_id
        await watcher.wait_for(MESSAGES, f"{wf}::t")
        await watcher.wait_for(EVENTS, f"{wf}::k")
        await watcher.wait_for(STREAMS, f"{wf}::s")
    # No trigger pushes events or streams any more (migrations 43/44); messages keep theirs.
    triggers = await query(
        db_url,
        "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON t.tgrelid = c.oid "
        "JOIN pg_namespace n ON c.relnamespace = n.oid "
        "WHERE n.nspname = 'dbos' AND NOT t.tgisinternal ORDER BY 1",
    )
    assert triggers == [("notifications",)]


async def test_the_listening_connection_is_visible_to_operators_and_closed_at_shutdown(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    async with running(new_dbos(use_listen_notify=True)) as dbos:
        listener = postgres_backend(dbos).listener
        assert listener is not None
        assert await listener_backend_pid(db_url) == listener.backend_pid
    await wait_until(lambda: _no_listener(db_url), timeout=HANG_GUARD)


async def _no_listener(url: str) -> bool:
    rows = await query(
        url,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND query LIKE 'LISTEN%%' AND state = 'idle'",
    )
    return rows == [(0,)]


async def test_without_the_messages_trigger_waiters_keep_re_checking_every_second(
    make_dbos: Callable[..., DBOS], dbos_url: str, wakeup_waits: list[tuple[str, float]]
) -> None:
    """A database first migrated with ``use_listen_notify=False`` has no trigger to NOTIFY
    receivers of messages: LISTEN works, but recv must not wait 60 s between looks."""
    await execute(dbos_url, "DROP TRIGGER dbos_notifications_trigger ON {t}notifications")
    receiver_app = make_dbos(use_listen_notify=True, executor_id="receiver")

    @receiver_app.workflow()
    async def receiver() -> object:
        return await receiver_app.recv("t", timeout_seconds=10)

    async with (
        make_dbos(use_listen_notify=True, executor_id="sender").launched() as sender_app,
        receiver_app.launched(),
    ):
        listener = postgres_backend(receiver_app).listener
        assert listener is not None
        await wait_until(lambda: listener.connections == 1 and listener.backend_pid is not None)
        await trio.sleep(0.5)  # time enough for the self-test to come back
        assert not listener.delivering
        assert postgres_backend(receiver_app).recheck_interval == POLLING_RECHECK_SECONDS
        handle = await receiver_app.start_workflow(receiver)
        await until_waiting(wakeup_waits, message_key(handle.workflow_id, "t"))
        await sender_app.send(handle.workflow_id, "polled", "t")
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == "polled"
        # Found by a re-check: every wait of the receiver was a second at most, never 60 s.
        key = message_key(handle.workflow_id, "t")
        rechecks = [timeout for k, timeout in wakeup_waits if k == key]
        assert rechecks and all(timeout <= POLLING_RECHECK_SECONDS for timeout in rechecks)
