"""send and recv: durable messages between workflows, in both notification modes.

Messages are observed in the ``notifications`` table (consumed, not deleted), replays are
real re-executions of the body from its stored checkpoints (``reexecute``), and every
test that waits runs with LISTEN/NOTIFY on and off (SQLite, which has no LISTEN, runs
the polling mode only).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import pytest
import trio

from dbos_trio import (
    DBOS,
    DBOSException,
    DBOSNonExistentWorkflowError,
    SetWorkflowID,
)
from dbos_trio._sysdb.records import NULL_TOPIC
from dbos_trio._sysdb.wakeups import message_key

from support.backends import query, status_row, steps_of
from support.dbos_fixtures import reexecute
from support.time_fixtures import (
    Stopwatch,
    launch,
    running,
    until_waiting,
    wait_for_waiter,
    waiting_on,
)
from support.waiting import HANG_GUARD, wait_until


async def test_topics_are_separate_queues_and_each_is_fifo(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool, glacial_polling: float
) -> None:
    dbos = new_dbos(use_listen_notify=notify)
    runs = {"send": 0, "recv": 0}

    @dbos.workflow()
    async def sender(destination: str, topic: str) -> str:
        # FIFO is by created_at, a millisecond clock: on PostgreSQL two messages sent
        # within one millisecond have no defined order (SQLite keeps insertion order).
        await dbos.send(destination, "test1")
        await trio.sleep(0.002)
        await dbos.send(destination, "test2", topic=topic)
        await trio.sleep(0.002)
        await dbos.send(destination, "test3")
        runs["send"] += 1
        return destination

    @dbos.workflow()
    async def receiver(topic: str) -> str:
        first = await dbos.recv(topic, timeout_seconds=glacial_polling)
        second = await dbos.recv(timeout_seconds=glacial_polling)
        third = await dbos.recv(timeout_seconds=glacial_polling)
        runs["recv"] += 1
        return "-".join(str(m) for m in (first, second, third))

    async with running(dbos):
        dest = str(uuid.uuid4())
        with SetWorkflowID(dest):
            handle = await dbos.start_workflow(receiver, "testtopic")
        await wait_for_waiter(dbos, message_key(dest, "testtopic"))
        sender_id = str(uuid.uuid4())
        with SetWorkflowID(sender_id):
            assert await sender(dest, "testtopic") == dest
        # Woken by the sends, not by polling or timeouts: both are ten minutes away.
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == "test2-test1-test3"

        # Starting either workflow again under its id runs nothing and sends nothing more.
        with SetWorkflowID(sender_id):
            assert await sender(dest, "testtopic") == dest
        with SetWorkflowID(dest):
            assert await receiver("testtopic") == "test2-test1-test3"
        assert runs == {"send": 1, "recv": 1}

        rows = await query(
            db_url,
            "SELECT message_uuid, topic, consumed, consumed_by_function_id "
            "FROM {t}notifications WHERE destination_uuid = %s ORDER BY created_at_epoch_ms",
            dest,
        )
        assert [(r[1], r[2], r[3]) for r in rows] == [
            (NULL_TOPIC, True, 3),  # test1: the second recv (ids 3-4)
            ("testtopic", True, 1),  # test2: the first recv (ids 1-2)
            (NULL_TOPIC, True, 5),  # test3: the third recv (ids 5-6)
        ]
        # Each recv takes two ids: the receive, then its timeout (a DBOS.sleep recorded
        # only if it had to wait).
        steps = [(s[0], s[1]) for s in await steps_of(db_url, dest)]
        assert [s for s in steps if s[1] == "DBOS.recv"] == [
            (1, "DBOS.recv"),
            (3, "DBOS.recv"),
            (5, "DBOS.recv"),
        ]
        assert (2, "DBOS.sleep") in steps
        assert all(s[0] % 2 == 0 for s in steps if s[1] == "DBOS.sleep")
        assert [(s[0], s[1]) for s in await steps_of(db_url, sender_id)] == [
            (1, "DBOS.send"),
            (2, "DBOS.send"),
            (3, "DBOS.send"),
        ]


async def test_a_message_sent_before_the_receiver_waits_is_received_at_once(
    new_dbos: Callable[..., DBOS], notify: bool, glacial_polling: float
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def receiver() -> object:
        await dbos.sleep(0.2)
        return await dbos.recv("t", timeout_seconds=glacial_polling)

    async with running(dbos):
        handle = await dbos.start_workflow(receiver)
        await dbos.send(handle.workflow_id, {"n": 1}, "t")
        # The receive's first look finds it: a poll or the timeout would be minutes away.
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == {"n": 1}


async def test_none_is_a_message_too(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool, glacial_polling: float
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def receiver() -> object:
        # A timeout would return None too, but ten minutes later, past the guard below.
        return await dbos.recv(timeout_seconds=glacial_polling)

    async with running(dbos):
        handle = await dbos.start_workflow(receiver)
        await wait_for_waiter(dbos, message_key(handle.workflow_id, NULL_TOPIC))
        await dbos.send(handle.workflow_id, None)
        with trio.fail_after(HANG_GUARD):
            message = await handle.get_result()
        assert message is None
        # Delivered, not timed out: the receive consumed the message.
        consumed = await query(
            db_url,
            "SELECT consumed FROM {t}notifications WHERE destination_uuid = %s",
            handle.workflow_id,
        )
        assert consumed == [(True,)]


async def test_send_to_a_missing_workflow_raises_and_inside_a_workflow_replays_the_error(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    missing = str(uuid.uuid4())

    @dbos.workflow()
    async def destination() -> None:
        pass

    @dbos.workflow()
    async def sender() -> str:
        try:
            await dbos.send(missing, "hello")
        except DBOSNonExistentWorkflowError:
            return "missing"
        return "sent"

    async with dbos.launched():
        with pytest.raises(DBOSNonExistentWorkflowError) as raised:
            await dbos.send(missing, "hello")
        assert f"Non-existent `send` destination workflow ID: {missing}" in str(raised.value)

        handle = await dbos.start_workflow(sender)
        assert await handle.get_result() == "missing"
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        assert [s.function_name for s in steps] == ["DBOS.send"]
        assert isinstance(steps[0].error, DBOSNonExistentWorkflowError)

        # Once the destination exists, a replay still takes the recorded branch and sends
        # nothing: the error is the checkpoint.
        with SetWorkflowID(missing):
            await destination()
        assert await reexecute(dbos, db_url, sender, handle.workflow_id) == "missing"
        assert await query(
            db_url, "SELECT count(*) FROM {t}notifications WHERE destination_uuid = %s", missing
        ) == [(0,)]


async def test_recv_outside_a_workflow_raises(new_dbos: Callable[..., DBOS]) -> None:
    dbos = new_dbos()

    @dbos.step()
    async def a_step() -> object:
        return await dbos.recv("t", timeout_seconds=0.1)

    @dbos.workflow()
    async def calls_a_step() -> object:
        return await a_step()

    async with dbos.launched():
        with pytest.raises(DBOSException, match=r"recv\(\) must be called from within a workflow"):
            await dbos.recv("t", timeout_seconds=0.1)
        with pytest.raises(DBOSException, match=r"recv\(\) must be called from within a workflow"):
            await calls_a_step()


async def test_a_recv_timeout_returns_none_and_a_replay_returns_none_at_once(
    new_dbos: Callable[..., DBOS],
    db_url: str,
    notify: bool,
    glacial_polling: float,
    wakeup_waits: list[tuple[str, float]],
) -> None:
    dbos = new_dbos(use_listen_notify=notify)
    runs = 0

    @dbos.workflow()
    async def receiver() -> object:
        nonlocal runs
        runs += 1
        return await dbos.recv("t", timeout_seconds=0.5)

    async with running(dbos):
        clock = Stopwatch()
        handle = await dbos.start_workflow(receiver)
        # The wait's own deadline ends it: the next look at the database is ten minutes
        # away, far past the guard.
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() is None
        assert clock() > 0.45  # not before the timeout
        steps = await steps_of(db_url, handle.workflow_id)
        assert [(s[0], s[1]) for s in steps] == [(1, "DBOS.recv"), (2, "DBOS.sleep")]
        # The timeout is recorded as an encoded None, never a NULL output (which dbos 3.4
        # refuses to replay: "No output recorded in the last recv").
        [(output, serialization)] = await query(
            db_url,
            "SELECT output, serialization FROM {t}operation_outputs "
            "WHERE workflow_uuid = %s AND function_id = 1",
            handle.workflow_id,
        )
        assert output is not None and serialization == "py_pickle"
        assert dbos._require_executor("test").codec.decode(output, serialization) is None

        # A message arriving after the timeout is not taken by the replay, which returns
        # the recorded None without waiting at all.
        await dbos.send(handle.workflow_id, "late", "t")
        # Only the receiver's own waits count (background tasks wait on their keys too).
        key = message_key(handle.workflow_id, "t")
        waits_before = len(wakeup_waits)
        assert any(k == key for k, _ in wakeup_waits)  # the first run did wait
        assert await reexecute(dbos, db_url, receiver, handle.workflow_id) is None
        assert [w for w in wakeup_waits[waits_before:] if w[0] == key] == []
        assert runs == 2
        rows = await query(
            db_url,
            "SELECT consumed, consumed_by_function_id FROM {t}notifications "
            "WHERE destination_uuid = %s",
            handle.workflow_id,
        )
        assert rows == [(False, None)]


async def test_a_recovered_recv_keeps_its_original_deadline(
    new_dbos: Callable[..., DBOS],
    db_url: str,
    notify: bool,
    glacial_polling: float,
    wakeup_waits: list[tuple[str, float]],
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def receiver() -> object:
        return await dbos.recv("t", timeout_seconds=2.0)

    workflow_id = str(uuid.uuid4())
    async with running(dbos):
        with SetWorkflowID(workflow_id):
            await dbos.start_workflow(receiver)
        clock = Stopwatch()

        async def deadline_recorded() -> bool:
            # The deadline is checkpointed before the wait begins.
            return [s[1] for s in await steps_of(db_url, workflow_id)] == ["DBOS.sleep"]

        await wait_until(deadline_recorded)
        await trio.sleep(1.0)
    # Shut down mid-wait: the row stays PENDING; the next launch recovers it.
    assert (await status_row(db_url, workflow_id))["status"] == "PENDING"
    waits_before = len(wakeup_waits)
    async with running(dbos):
        handle = await dbos.retrieve_workflow(workflow_id)
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() is None
    assert clock() > 1.8  # not before the original deadline
    # The recovered wait was for what was left of the original 2 s (at least 1 s had
    # passed before the shutdown), not for a new 2 s.
    key = message_key(workflow_id, "t")
    recovered = [timeout for k, timeout in wakeup_waits[waits_before:] if k == key]
    assert recovered and recovered[0] <= 1.0, recovered


async def test_messages_are_marked_consumed_by_the_receiving_step_not_deleted(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def receiver() -> list[object]:
        await dbos.recv("warmup", timeout_seconds=0.01)  # ids 1-2 (times out)
        return [await dbos.recv("t", timeout_seconds=5) for _ in range(2)]  # ids 3-6

    async with running(dbos):
        handle = await dbos.start_workflow(receiver)
        await wait_for_waiter(dbos, message_key(handle.workflow_id, "t"))
        for message in ("a", "b", "c"):
            await dbos.send(handle.workflow_id, message, "t")
            await trio.sleep(0.002)  # one millisecond apart: a defined order on both backends
        assert await handle.get_result() == ["a", "b"]
        rows = await query(
            db_url,
            "SELECT message, consumed, consumed_by_function_id FROM {t}notifications "
            "WHERE destination_uuid = %s ORDER BY created_at_epoch_ms",
            handle.workflow_id,
        )
        codec_decode = dbos._require_executor("test").codec.decode
        assert [(codec_decode(r[0], "py_pickle"), r[1], r[2]) for r in rows] == [
            ("a", True, 3),
            ("b", True, 5),
            ("c", False, None),
        ]
        # A replay returns the recorded messages and consumes nothing more.
        assert await reexecute(dbos, db_url, receiver, handle.workflow_id) == ["a", "b"]
        unconsumed = await query(
            db_url,
            "SELECT count(*) FROM {t}notifications WHERE destination_uuid = %s AND NOT consumed",
            handle.workflow_id,
        )
        assert unconsumed == [(1,)]


async def test_an_idempotency_key_makes_one_message_however_often_the_send_is_retried(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def receiver() -> str:
        first = await dbos.recv(timeout_seconds=5)
        second = await dbos.recv(timeout_seconds=0.5)
        return f"{first}-{second}"

    @dbos.workflow()
    async def sender(destination: str, key: str) -> None:
        await dbos.send(destination, "from-workflow", idempotency_key=key)

    @dbos.step()
    async def send_step(destination: str, key: str) -> None:
        await dbos.send(destination, "from-step", idempotency_key=key)

    @dbos.workflow()
    async def step_sender(destination: str, key: str) -> None:
        await send_step(destination, key)

    async with running(dbos):
        for how in ("outside", "workflow", "step"):
            handle = await dbos.start_workflow(receiver)
            key = str(uuid.uuid4())
            for _ in range(3):
                if how == "outside":
                    await dbos.send(handle.workflow_id, "from-outside", idempotency_key=key)
                elif how == "workflow":
                    await sender(handle.workflow_id, key)  # three distinct sender workflows
                else:
                    await step_sender(handle.workflow_id, key)
            assert await handle.get_result() == f"from-{how}-None"
            rows = await query(
                db_url,
                "SELECT message_uuid FROM {t}notifications WHERE destination_uuid = %s",
                handle.workflow_id,
            )
            assert rows == [(f"{key}::{handle.workflow_id}",)]


async def test_different_idempotency_keys_are_different_messages(
    new_dbos: Callable[..., DBOS], notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def receiver() -> str:
        first = await dbos.recv("t", timeout_seconds=5)
        second = await dbos.recv("t", timeout_seconds=5)
        return f"{first}-{second}"

    async with running(dbos):
        handle = await dbos.start_workflow(receiver)
        await dbos.send(handle.workflow_id, "a", "t", idempotency_key=str(uuid.uuid4()))
        await dbos.send(handle.workflow_id, "b", "t", idempotency_key=str(uuid.uuid4()))
        assert await handle.get_result() == "a-b"


async def test_a_second_receiver_on_one_topic_in_one_process_is_refused(
    new_dbos: Callable[..., DBOS], notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def two_receivers() -> list[object]:
        results: list[object] = []
        refused: list[BaseException] = []

        async def receive() -> None:
            try:
                results.append(await dbos.recv("t", timeout_seconds=5))
            except DBOSException as error:
                refused.append(error)

        async with dbos.open_nursery() as nursery:
            nursery.start_soon(receive)
            nursery.start_soon(receive)
        assert len(refused) == 1, refused
        assert "another receiver" in str(refused[0])
        # Other topics are independent.
        results.append(await dbos.recv("other", timeout_seconds=5))
        return results

    async with running(dbos):
        handle = await dbos.start_workflow(two_receivers)
        await wait_for_waiter(dbos, message_key(handle.workflow_id, "t"))
        await dbos.send(handle.workflow_id, "one", "t")
        await wait_for_waiter(dbos, message_key(handle.workflow_id, "other"))
        await dbos.send(handle.workflow_id, "two", "other")
        assert await handle.get_result() == ["one", "two"]


async def test_a_receiver_in_another_process_is_woken_through_the_listener(
    new_dbos: Callable[..., DBOS],
    notify: bool,
    wakeup_waits: list[tuple[str, float]],
    woken_waits: list[str],
) -> None:
    """The receiver runs in a second executor (its own waiter registry): only LISTEN, or
    its fallback re-check with notifications off, can tell it a message arrived."""
    receiver_app = new_dbos(use_listen_notify=notify, executor_id="receiver")

    @receiver_app.workflow(name="receiver")
    async def receiver() -> object:
        return await receiver_app.recv("t", timeout_seconds=10 * HANG_GUARD)

    async with (
        launch(new_dbos, notify, executor_id="sender") as sender_app,
        running(receiver_app),
    ):
        handle = await receiver_app.start_workflow(receiver)
        await wait_for_waiter(receiver_app, message_key(handle.workflow_id, "t"))
        await until_waiting(wakeup_waits, message_key(handle.workflow_id, "t"))
        await sender_app.send(handle.workflow_id, "hello", "t")
        with trio.fail_after(HANG_GUARD):
            message = await handle.get_result()
    assert message == "hello"
    key = message_key(handle.workflow_id, "t")
    if notify:
        assert key in woken_waits  # the trigger's NOTIFY woke it
    else:
        # The fallback re-check found it: the receiver looked again every second.
        rechecks = [timeout for k, timeout in wakeup_waits if k == key]
        assert rechecks and all(timeout <= 1.0 for timeout in rechecks), rechecks


async def test_a_recv_cancelled_by_the_bodys_own_scope_is_abandoned_and_the_body_goes_on(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def receiver() -> object:
        with trio.move_on_after(0.3):
            await dbos.recv("t", timeout_seconds=30)  # ids 1-2, abandoned
        return await dbos.recv("t", timeout_seconds=30)  # ids 3-4

    async with running(dbos):
        handle = await dbos.start_workflow(receiver)
        await trio.sleep(0.5)
        await wait_for_waiter(dbos, message_key(handle.workflow_id, "t"))
        await dbos.send(handle.workflow_id, "x", "t")
        assert await handle.get_result() == "x"
        steps = [(s[0], s[1]) for s in await steps_of(db_url, handle.workflow_id)]
        assert (1, "DBOS.recv") not in steps
        assert (2, "DBOS.sleep") in steps
        assert (3, "DBOS.recv") in steps
        rows = await query(
            db_url,
            "SELECT consumed_by_function_id FROM {t}notifications WHERE destination_uuid = %s",
            handle.workflow_id,
        )
        assert rows == [(3,)]


async def test_cancelling_a_caller_blocked_in_recv_leaves_the_workflow_pending_for_recovery(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    @dbos.workflow()
    async def receiver() -> object:
        return await dbos.recv("t", timeout_seconds=30)

    async with running(dbos):
        workflow_id = str(uuid.uuid4())
        key = message_key(workflow_id, "t")
        with trio.move_on_after(HANG_GUARD) as scope:
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    with SetWorkflowID(workflow_id):
                        await receiver()

                nursery.start_soon(call)
                await wait_for_waiter(dbos, key)
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught
        # The subscription went with the cancelled wait, and the row stays PENDING.
        assert not waiting_on(dbos, key)
        assert (await status_row(db_url, workflow_id))["status"] == "PENDING"
        # A message sent now waits, unconsumed, for the recovered execution to take it.
        await dbos.send(workflow_id, "for-recovery", "t")
        await trio.sleep(0.2)
        assert await query(
            db_url,
            "SELECT consumed FROM {t}notifications WHERE destination_uuid = %s",
            workflow_id,
        ) == [(False,)]
        assert await reexecute(dbos, db_url, receiver, workflow_id) == "for-recovery"
        assert await query(
            db_url,
            "SELECT consumed, consumed_by_function_id FROM {t}notifications "
            "WHERE destination_uuid = %s",
            workflow_id,
        ) == [(True, 1)]


async def test_concurrent_receives_are_numbered_in_call_order_so_replays_match(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    """Trio starts tasks in no fixed order; the ids are taken when ``dbos.recv(...)`` is
    called, so a replay hands each receive the message it got the first time."""
    dbos = new_dbos()
    topics = ("a", "b", "c", "d")

    @dbos.workflow()
    async def receive_all() -> list[object]:
        got: dict[str, object] = {}

        async def store(topic: str, receiving: Awaitable[object]) -> None:
            got[topic] = await receiving

        async with trio.open_nursery() as nursery:
            for topic in topics:
                nursery.start_soon(store, topic, dbos.recv(topic, timeout_seconds=5))
        return [got[topic] for topic in topics]

    async with running(dbos):
        handle = await dbos.start_workflow(receive_all)
        for topic in topics:
            await dbos.send(handle.workflow_id, topic.upper(), topic)
        expected = [topic.upper() for topic in topics]
        assert await handle.get_result() == expected
        rows = await query(
            db_url,
            "SELECT topic, consumed_by_function_id FROM {t}notifications "
            "WHERE destination_uuid = %s ORDER BY topic",
            handle.workflow_id,
        )
        assert rows == [("a", 1), ("b", 3), ("c", 5), ("d", 7)]
        for _ in range(10):
            assert await reexecute(dbos, db_url, receive_all, handle.workflow_id) == expected
