"""psycopg driven natively from Trio: cancellation, transactions, LISTEN, Ctrl-C, timeouts.

These are the correctness checks ``../shared/reference/trio-postgres.md`` recommends
keeping as regression tests for the adapter (it relies on psycopg internals, so they must
pass on every psycopg upgrade). They run against the real server with the real clock,
except where a test is about the autojump clock itself.
"""

from __future__ import annotations

import random
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import aclosing
from typing import Any

import psycopg
import pytest
import trio
import trio.testing
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.waiting import Wait

from dbos_trio._pg import driver, waiting
from dbos_trio._pg.connecting import connect
from dbos_trio._pg.driver import TrioConnection

from support.backends import connected
from support.dbos_fixtures import StatementCounter
from support.pg_support import fresh_database
from support.scripts.interrupt_query import interrupt
from support.waiting import HANG_GUARD, LONG_QUERY, LONG_QUERY_SECONDS

IDLE = pq.TransactionStatus.IDLE


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    """One scratch database for the module; tests keep apart by application_name/table."""
    with fresh_database("driver") as url:
        yield url


@pytest.fixture(autouse=True)
def patient_cleanup(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give the clean-up after an interruption (cancel request, drain) up to the hang guard
    before the driver gives the connection up, instead of its 5 s: on a loaded machine the
    server can take longer than that to stop a query, and these tests are about what the
    clean-up leaves behind, not about its time limit."""
    monkeypatch.setattr(driver, "CLEANUP_LIMIT_SECONDS", HANG_GUARD)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


async def scalar(conn: TrioConnection, query: str, params: Any = None) -> Any:
    cur = await conn.execute(query, params)
    row = await cur.fetchone()
    assert row is not None
    return row[0]


async def backend_state(observer: TrioConnection, pid: int) -> tuple[str, str] | None:
    cur = await observer.execute("SELECT state, query FROM pg_stat_activity WHERE pid = %s", [pid])
    row = await cur.fetchone()
    return None if row is None else (row[0], row[1])


# ----------------------------------------------------------------------- cancellation


async def test_a_query_cancelled_mid_sleep_returns_promptly_and_is_cancelled_on_the_server(
    database_url: str,
) -> None:
    async with connected(database_url) as conn, connected(database_url) as observer:
        pid = await scalar(conn, "SELECT pg_backend_pid()")
        # Back within the guard from a ten-minute query: the cancellation ended the wait.
        with trio.fail_after(HANG_GUARD), trio.move_on_after(0.2) as scope:
            await conn.execute(LONG_QUERY)

        assert scope.cancelled_caught
        state = await backend_state(observer, pid)
        assert state is not None
        assert state[0] == "idle", f"the server still runs the query: {state}"


async def test_a_query_cancelled_mid_sleep_leaves_the_connection_usable(
    database_url: str,
) -> None:
    async with connected(database_url) as conn:
        with trio.move_on_after(0.1):
            await conn.execute(LONG_QUERY)

        assert not conn.closed
        assert conn.info.transaction_status == IDLE
        # Answered within the guard: the server is not still running the ten-minute query
        # ahead of this one.
        with trio.fail_after(HANG_GUARD):
            assert await scalar(conn, "SELECT 41 + 1") == 42


async def test_a_statement_in_an_already_cancelled_scope_never_reaches_the_server(
    database_url: str, statement_counter: StatementCounter
) -> None:
    table = unique("never_sent")
    async with connected(database_url) as conn:
        await conn.execute(f"CREATE TABLE {table} (v int)")
        before = statement_counter.snapshot()
        with trio.CancelScope() as scope:
            scope.cancel()
            await conn.execute(f"INSERT INTO {table} VALUES (1)")

        assert scope.cancelled_caught
        # Not one conversation with the server: neither the statement nor a cancel request.
        assert (statement_counter.snapshot() - before).round_trips == 0
        assert conn.info.transaction_status == IDLE
        assert await scalar(conn, f"SELECT count(*) FROM {table}") == 0


async def test_a_second_interrupt_while_cancelling_a_query_closes_the_connection(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with connected(database_url) as conn:

        async def interrupted_cancel(*, timeout: float = 30.0) -> None:
            raise KeyboardInterrupt  # a second Ctrl-C, during the server-side cancel

        monkeypatch.setattr(conn, "cancel_safe", interrupted_cancel)
        with pytest.raises(KeyboardInterrupt), trio.move_on_after(0.1):
            await conn.execute("SELECT pg_sleep(5)")

        # Never left ACTIVE and looking usable: the next query would hang or fail.
        assert conn.closed


async def test_a_cancelled_transaction_rolls_back_and_leaves_the_connection_idle(
    database_url: str,
) -> None:
    table = unique("cancelled_tx")
    async with connected(database_url) as conn:
        await conn.execute(f"CREATE TABLE {table} (v int)")
        with trio.move_on_after(0.2) as scope:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {table} VALUES (1)")
                await conn.execute("SELECT pg_sleep(5)")

        assert scope.cancelled_caught
        assert conn.info.transaction_status == IDLE
        assert await scalar(conn, f"SELECT count(*) FROM {table}") == 0


async def test_a_transaction_cancelled_at_a_checkpoint_between_statements_rolls_back(
    database_url: str,
) -> None:
    table = unique("cancelled_between")
    async with connected(database_url) as conn:
        await conn.execute(f"CREATE TABLE {table} (v int)")
        with trio.CancelScope() as scope:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {table} VALUES (1)")
                scope.cancel()
                await trio.lowlevel.checkpoint()

        assert scope.cancelled_caught
        assert conn.info.transaction_status == IDLE
        assert await scalar(conn, f"SELECT count(*) FROM {table}") == 0


async def test_a_transaction_block_that_ends_in_a_cancelled_scope_still_commits(
    database_url: str,
) -> None:
    # Cancellation is level-triggered: without a shield, COMMIT in __aexit__ would itself
    # be cancelled and the connection left mid-transaction.
    table = unique("commit_shielded")
    async with connected(database_url) as conn:
        await conn.execute(f"CREATE TABLE {table} (v int)")
        with trio.CancelScope() as scope:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {table} VALUES (1)")
                scope.cancel()

        assert conn.info.transaction_status == IDLE
        assert await scalar(conn, f"SELECT count(*) FROM {table}") == 1


async def test_queries_under_random_deadlines_never_return_another_querys_result(
    database_url: str,
) -> None:
    rng = random.Random(20250615)
    mismatched: list[tuple[int, Any]] = []
    unexpected: list[BaseException] = []
    completed = cancelled = 0
    async with connected(database_url) as conn:
        for i in range(200):
            sleep_ms = rng.uniform(0, 2)
            with trio.move_on_after(rng.uniform(0, 0.003)) as scope:
                try:
                    cur = await conn.execute("SELECT %s::int, pg_sleep(%s)", [i, sleep_ms / 1000])
                    row = await cur.fetchone()
                except psycopg.Error as error:
                    unexpected.append(error)
                    continue
            if scope.cancelled_caught:
                cancelled += 1
                continue
            completed += 1
            if row is None or row[0] != i:
                mismatched.append((i, row))

        assert mismatched == []
        assert unexpected == []
        assert completed > 0 and cancelled > 0, (completed, cancelled)
        assert conn.info.transaction_status == IDLE
        assert await scalar(conn, "SELECT %s::int", [123456]) == 123456


async def test_tasks_sharing_one_connection_take_turns(database_url: str) -> None:
    results: dict[int, int] = {}
    async with connected(database_url) as conn:

        async def ask(i: int) -> None:
            results[i] = await scalar(conn, "SELECT %s::int * 2", [i])

        async with trio.open_nursery() as nursery:
            for i in range(20):
                nursery.start_soon(ask, i)

    assert results == {i: 2 * i for i in range(20)}


async def test_a_streamed_query_cancelled_midway_leaves_the_connection_usable(
    database_url: str,
) -> None:
    received = 0
    async with connected(database_url) as conn:
        with trio.CancelScope() as scope:
            async with (
                conn.cursor() as cur,
                aclosing(cur.stream("SELECT generate_series(1, 100000000)")) as rows,
            ):
                async for _ in rows:
                    received += 1
                    if received == 100:
                        scope.cancel()

        assert received >= 100
        assert not conn.closed
        assert conn.info.transaction_status == IDLE
        assert await scalar(conn, "SELECT 8") == 8


@pytest.mark.parametrize("direction", ["COPY FROM STDIN", "COPY TO STDOUT"])
async def test_a_cancelled_copy_never_leaves_the_connection_mid_conversation(
    database_url: str, direction: str
) -> None:
    table = unique("copied")
    async with connected(database_url) as conn:
        await conn.execute(f"CREATE TABLE {table} (v int)")
        with trio.move_on_after(0.1) as scope:
            async with conn.cursor() as cur:
                if direction == "COPY FROM STDIN":
                    async with cur.copy(f"COPY {table} (v) FROM STDIN") as copy:
                        for i in range(100_000_000):
                            await copy.write_row((i,))
                            if i % 1000 == 0:
                                await trio.lowlevel.checkpoint()
                else:
                    query = "COPY (SELECT generate_series(1, 100000000)) TO STDOUT"
                    async with cur.copy(query) as copy:
                        async for _ in copy.rows():
                            pass

        assert scope.cancelled_caught
        # Closed is acceptable; half-way through the COPY is not.
        if not conn.closed:
            assert conn.info.transaction_status == IDLE
            assert await scalar(conn, "SELECT 9") == 9
            assert await scalar(conn, f"SELECT count(*) FROM {table}") == 0


# ------------------------------------------------------------------- large payloads


async def test_a_parameter_larger_than_the_socket_buffer_is_sent_with_read_write_waits(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[Wait] = []
    real_wait_socket = waiting.wait_socket

    async def recording_wait_socket(fileno: int, wait: Wait) -> Any:
        waits.append(wait)
        return await real_wait_socket(fileno, wait)

    monkeypatch.setattr(waiting, "wait_socket", recording_wait_socket)
    payload = "x" * 10_000_000
    async with connected(database_url) as conn:
        assert await scalar(conn, "SELECT length(%s::text)", [payload]) == len(payload)
        assert await scalar(conn, "SELECT 1") == 1

    # The send had to wait for the socket to drain: psycopg asks for writability alone
    # or together with readability depending on how far the flush got (seen both ways).
    assert Wait.RW in waits or Wait.W in waits


async def test_a_query_cancelled_while_its_parameters_are_still_being_sent_raises_cancelled_and_leaves_the_connection_usable(  # noqa: E501
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope = trio.CancelScope()
    cancelled_in: list[Wait] = []
    real_wait_socket = waiting.wait_socket

    async def cancel_in_the_first_read_write_wait(fileno: int, wait: Wait) -> Any:
        if wait == Wait.RW and not cancelled_in:
            cancelled_in.append(wait)
            scope.cancel()
        return await real_wait_socket(fileno, wait)

    monkeypatch.setattr(waiting, "wait_socket", cancel_in_the_first_read_write_wait)
    raised: list[BaseException] = []
    async with connected(database_url) as conn:
        with scope:
            try:
                await conn.execute("SELECT length(%s::text)", ["y" * 30_000_000])
            except BaseException as error:
                raised.append(error)
                raise

        assert cancelled_in == [Wait.RW]
        # The same exception a single-direction wait raises: code that catches
        # trio.Cancelled must not be handed an exception group.
        assert [type(error) for error in raised] == [trio.Cancelled]
        assert scope.cancelled_caught
        assert not conn.closed
        assert conn.info.transaction_status == IDLE
        assert await scalar(conn, "SELECT 7") == 7


# ---------------------------------------------------------------------------- LISTEN


async def test_listen_receives_each_notify_sent_from_another_connection_once(
    database_url: str,
) -> None:
    channel = unique("chan")
    received: list[tuple[str, str]] = []
    async with connected(database_url) as listener, connected(database_url) as sender:
        await listener.execute(f"LISTEN {channel}")
        with trio.fail_after(HANG_GUARD):
            async with trio.open_nursery() as nursery:

                async def receive() -> None:
                    async for notify in listener.notifications():
                        received.append((notify.channel, notify.payload))
                        if len(received) == 3:
                            return

                nursery.start_soon(receive)
                for payload in ("first", "second", "third"):
                    await sender.execute("SELECT pg_notify(%s, %s)", [channel, payload])
                    await trio.sleep(0.02)

        # Nothing more is pending: a further wait times out rather than replaying one.
        extra: list[str] = []
        with trio.move_on_after(0.2):
            async for notify in listener.notifications():
                extra.append(notify.payload)

    assert received == [(channel, "first"), (channel, "second"), (channel, "third")]
    assert extra == []


async def test_a_notify_that_arrives_during_a_query_is_delivered_by_the_next_wait(
    database_url: str,
) -> None:
    channel = unique("chan")
    async with connected(database_url) as listener, connected(database_url) as sender:
        await listener.execute(f"LISTEN {channel}")
        await sender.execute("SELECT pg_notify(%s, 'during')", [channel])
        # The NOTIFY is already on the wire; this query reads it before its own result.
        await trio.sleep(0.05)
        assert await scalar(listener, "SELECT 1") == 1

        with trio.fail_after(HANG_GUARD):
            notify = await listener.notifications().__anext__()

    assert (notify.channel, notify.payload) == (channel, "during")


async def test_cancelling_an_idle_notifications_wait_returns_promptly_and_the_connection_still_works(  # noqa: E501
    database_url: str,
) -> None:
    channel = unique("chan")
    async with connected(database_url) as listener, connected(database_url) as sender:
        await listener.execute(f"LISTEN {channel}")
        # Nothing is ever sent: only the cancellation can end the wait within the guard.
        with trio.fail_after(HANG_GUARD), trio.move_on_after(0.3) as scope:
            async for _ in listener.notifications():
                raise AssertionError("nothing was sent")

        assert scope.cancelled_caught
        assert await scalar(listener, "SELECT 5") == 5
        await sender.execute("SELECT pg_notify(%s, 'after')", [channel])
        with trio.fail_after(HANG_GUARD):
            notify = await listener.notifications().__anext__()
        assert notify.payload == "after"


# -------------------------------------------------------------------------- Ctrl-C


@pytest.mark.parametrize("mode", ["autocommit", "transaction", "child"])
async def test_ctrl_c_during_a_query_exits_with_keyboard_interrupt_and_cancels_the_server_query(
    database_url: str, mode: str
) -> None:
    table = unique("interrupted")
    report, process, _ = await interrupt(
        database_url, mode, application_name=unique("sigint"), table=table
    )

    assert "KeyboardInterrupt" in process.stderr, process.stderr
    assert process.returncode != 0
    # The ten-minute query did not run to its end: Ctrl-C ended it (the helper gives the
    # process HANG_GUARD seconds to exit after the signal).
    assert "KeyboardInterrupt" in report["interrupted"]
    assert report["elapsed"] < LONG_QUERY_SECONDS
    # The query was cancelled on the server, and the connection was left usable.
    assert report["server_state"] == "idle", report
    assert report["status"] == "IDLE"
    assert report["next_value"] == 42
    assert report["idle_in_transaction"] == 0
    assert report["rows"] == 0


# ------------------------------------------------------------------------ connecting


async def test_connecting_works_under_the_autojump_clock(
    database_url: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with connected(database_url, connect_timeout=5) as conn:
        assert await scalar(conn, "SELECT 3") == 3


@pytest.fixture
def silent_server() -> Iterator[tuple[str, int]]:
    """A TCP port that accepts connections into its backlog and never says a word."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(16)
        yield listening.getsockname()


def silent_url(database_url: str, address: tuple[str, int]) -> str:
    params = conninfo_to_dict(database_url)
    params.update(host=address[0], port=str(address[1]))
    return make_conninfo("", **params)


async def test_connecting_to_a_server_that_never_answers_fails_after_the_connect_timeout(
    database_url: str, silent_server: tuple[str, int]
) -> None:
    # The server never answers: without the timeout this would wait for ever.
    started = time.monotonic()
    with trio.fail_after(HANG_GUARD), pytest.raises(psycopg.OperationalError, match="timeout"):
        await connect(silent_url(database_url, silent_server), connect_timeout=0.5)

    assert time.monotonic() - started >= 0.45  # not before the timeout


async def test_the_connect_timeout_is_real_time_under_the_autojump_clock(
    database_url: str,
    silent_server: tuple[str, int],
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A Trio deadline would fire at once here (a task waiting on a socket counts as
    # idle); the limit must take half a second of real time, not zero and not forever.
    # (No trio.fail_after as the hang guard: under this clock it would fire at once too.)
    started = time.monotonic()
    with pytest.raises(psycopg.OperationalError, match="timeout"):
        await connect(silent_url(database_url, silent_server), connect_timeout=0.5)
    took = time.monotonic() - started

    assert 0.45 <= took < HANG_GUARD


async def test_connecting_to_a_closed_port_fails_at_once(database_url: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = probe.getsockname()
    # The port is free again, and nothing listens on it. Within the guard, from a
    # ten-minute connect timeout: the refusal ended the attempt, not the timeout.
    with trio.fail_after(HANG_GUARD), pytest.raises(psycopg.OperationalError):
        await connect(silent_url(database_url, address), connect_timeout=10 * HANG_GUARD)


# ------------------------------------------------------------------------ liveness


async def test_an_idle_connection_whose_backend_was_terminated_is_reported_unhealthy(
    database_url: str,
) -> None:
    async with connected(database_url) as conn, connected(database_url) as admin:
        assert conn.is_healthy_when_idle()
        pid = await scalar(conn, "SELECT pg_backend_pid()")
        assert await scalar(admin, "SELECT pg_terminate_backend(%s, 5000)", [pid])

        assert not conn.is_healthy_when_idle()


async def test_an_idle_connection_that_received_a_notify_is_still_healthy(
    database_url: str,
) -> None:
    channel = unique("chan")
    async with connected(database_url) as conn, connected(database_url) as sender:
        await conn.execute(f"LISTEN {channel}")
        await sender.execute("SELECT pg_notify(%s, 'hello')", [channel])
        await trio.sleep(0.05)

        assert conn.is_healthy_when_idle()
        with trio.fail_after(HANG_GUARD):
            notify = await conn.notifications().__anext__()
        assert notify.payload == "hello"
