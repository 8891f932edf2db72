"""Streams: values in order from offset 0, a close marker, and readers that know when to stop.

Readers run in the writer's executor and, for the listener path, in a second executor
with its own waiter registry; every test that waits runs in both notification modes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, DBOSException, DBOSNonExistentWorkflowError, SetWorkflowID
from dbos_trio._sysdb.wakeups import stream_key

from support.backends import execute, query, steps_of
from support.dbos_fixtures import reexecute
from support.time_fixtures import running, until_waiting, waiting_on
from support.waiting import HANG_GUARD


async def read_all(dbos: DBOS, workflow_id: str, key: str) -> list[Any]:
    return [value async for value in dbos.read_stream(workflow_id, key)]


async def test_ten_values_then_close_are_read_in_order_while_and_after_they_are_written(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)
    release = trio.Event()

    @dbos.workflow()
    async def writer(n: int) -> str:
        for i in range(n):
            await dbos.write_stream("s", {"i": i})
            await trio.sleep(0.01)
        await dbos.close_stream("s")
        await release.wait()  # still running after the close: the marker ends the read
        return "done"

    async with running(dbos):
        workflow_id = str(uuid.uuid4())
        with SetWorkflowID(workflow_id):
            handle = await dbos.start_workflow(writer, 10)
        with trio.fail_after(HANG_GUARD):
            assert await read_all(dbos, workflow_id, "s") == [{"i": i} for i in range(10)]
        # It stopped at the close marker: the writer cannot end before this release.
        assert (await handle.get_status()).status == "PENDING"
        release.set()
        assert await handle.get_result() == "done"
        assert await read_all(dbos, workflow_id, "s") == [{"i": i} for i in range(10)]

        rows = await query(
            db_url,
            'SELECT "offset", function_id, value, serialization FROM {t}streams '
            'WHERE workflow_uuid = %s AND key = %s ORDER BY "offset"',
            workflow_id,
            "s",
        )
        assert [r[0] for r in rows] == list(range(11))
        assert [r[1] for r in rows] == list(range(1, 12))
        assert rows[-1][2:] == (json.dumps("__DBOS_STREAM_CLOSED__"), "portable_json")
        steps = [s[1] for s in await steps_of(db_url, workflow_id)]
        assert steps == ["DBOS.writeStream"] * 10 + ["DBOS.closeStream"]


async def test_a_reader_in_another_process_follows_the_stream_through_the_listener(
    new_dbos: Callable[..., DBOS],
    notify: bool,
    wakeup_waits: list[tuple[str, float]],
    woken_waits: list[str],
) -> None:
    writer_app = new_dbos(use_listen_notify=notify, executor_id="writer")
    reader_app = new_dbos(use_listen_notify=notify, executor_id="reader")
    go = trio.Event()

    @writer_app.workflow()
    async def writer() -> None:
        await go.wait()
        await writer_app.write_stream("s", "first")
        await writer_app.close_stream("s")

    async with running(writer_app), running(reader_app):
        handle = await writer_app.start_workflow(writer)
        received: list[Any] = []

        async def read() -> None:
            async for value in reader_app.read_stream(handle.workflow_id, "s"):
                received.append(value)

        key = stream_key(handle.workflow_id, "s")
        with trio.fail_after(HANG_GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                await until_waiting(wakeup_waits, key)  # past its first look: waiting
                go.set()
        assert received == ["first"]
        if notify:
            # The reader's wait was woken: across executors only its listener, on the
            # writer's NOTIFY, wakes it.
            assert key in woken_waits
        else:
            # Found by the reader's re-checks, a second apart at most.
            rechecks = [timeout for k, timeout in wakeup_waits if k == key]
            assert rechecks and all(timeout <= 1.0 for timeout in rechecks), rechecks
        await handle.get_result()


async def test_a_never_closed_stream_of_a_finished_workflow_ends_after_its_last_value(
    new_dbos: Callable[..., DBOS],
) -> None:
    dbos = new_dbos()
    values: list[Any] = ["hello", 42, {"key": "value"}, [1, 2, 3], None]

    @dbos.workflow()
    async def writer() -> None:
        for value in values:
            await dbos.write_stream("s", value)

    @dbos.workflow()
    async def failing_writer() -> None:
        for value in values:
            await dbos.write_stream("s", value)
        raise RuntimeError("writer failed")

    @dbos.workflow()
    async def silent() -> None:
        pass

    async with running(dbos):
        handle = await dbos.start_workflow(writer)
        await handle.get_result()
        assert await read_all(dbos, handle.workflow_id, "s") == values

        handle = await dbos.start_workflow(failing_writer)
        with pytest.raises(RuntimeError):
            await handle.get_result()
        assert await read_all(dbos, handle.workflow_id, "s") == values

        handle = await dbos.start_workflow(silent)
        await handle.get_result()
        assert await read_all(dbos, handle.workflow_id, "never-written") == []


async def test_a_reader_blocked_on_an_open_stream_stops_soon_after_the_writer_finishes(
    new_dbos: Callable[..., DBOS], notify: bool, wakeup_waits: list[tuple[str, float]]
) -> None:
    dbos = new_dbos(use_listen_notify=notify)

    release = trio.Event()

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", "only")
        await release.wait()

    async with running(dbos):
        handle = await dbos.start_workflow(writer)
        key = stream_key(handle.workflow_id, "s")
        got: list[Any] = []

        async def read() -> None:
            got.extend(await read_all(dbos, handle.workflow_id, "s"))

        with trio.fail_after(HANG_GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                await until_waiting(wakeup_waits, key)  # read "only", waits for more
                release.set()
        assert got == ["only"]
        # Termination has no notification: the reader re-checks at least every second.
        rechecks = [timeout for k, timeout in wakeup_waits if k == key]
        assert rechecks and all(timeout <= 1.0 for timeout in rechecks), rechecks
        await handle.get_result()


async def test_reading_the_stream_of_a_missing_workflow_raises(
    new_dbos: Callable[..., DBOS],
) -> None:
    dbos = new_dbos()
    async with running(dbos):
        missing = str(uuid.uuid4())
        with pytest.raises(
            DBOSNonExistentWorkflowError, match=f"Non-existent target workflow ID: {missing}"
        ):
            await read_all(dbos, missing, "s")


async def test_writes_come_from_workflows_or_steps_only_and_step_writes_are_not_recorded(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    attempts = 0

    @dbos.step(retries_allowed=True, max_attempts=3, interval_seconds=0)
    async def flaky_writer() -> int:
        nonlocal attempts
        attempts += 1
        await dbos.write_stream("s", f"attempt {attempts}")
        if attempts < 3:
            raise RuntimeError("again")
        return attempts

    @dbos.step()
    async def closer() -> None:
        await dbos.close_stream("s")

    @dbos.workflow()
    async def writer() -> None:
        await flaky_writer()  # 1
        await dbos.write_stream("s", "from the body")  # 2
        await closer()  # 3

    async with running(dbos):
        with pytest.raises(DBOSException, match="must be called from within a workflow or step"):
            await dbos.write_stream("s", 1)
        with pytest.raises(DBOSException, match="must be called from within a workflow or step"):
            await dbos.close_stream("s")
        handle = await dbos.start_workflow(writer)
        await handle.get_result()
        assert await read_all(dbos, handle.workflow_id, "s") == [
            "attempt 1",
            "attempt 2",
            "attempt 3",
            "from the body",
        ]
        steps = [(s[0], s[1]) for s in await steps_of(db_url, handle.workflow_id)]
        assert steps == [
            (1, flaky_writer.__qualname__),
            (2, "DBOS.writeStream"),
            (3, closer.__qualname__),
        ]


async def test_a_workflow_reading_a_stream_checkpoints_each_value_and_the_end(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    values: list[Any] = ["a", None, {"k": "v"}]
    reads = 0

    @dbos.workflow()
    async def writer() -> None:
        for value in values:
            await dbos.write_stream("s", value)

    @dbos.workflow()
    async def reader(target: str) -> list[Any]:
        nonlocal reads
        reads += 1
        return [value async for value in dbos.read_stream(target, "s")]

    @dbos.step()
    async def after() -> str:
        return "after"

    @dbos.workflow()
    async def partial_reader(target: str) -> list[Any]:
        seen = []
        async for value in dbos.read_stream(target, "s"):
            seen.append(value)
            if len(seen) == 2:
                break
        return [seen, await after()]

    async with running(dbos):
        writer_id = str(uuid.uuid4())
        with SetWorkflowID(writer_id):
            await writer()
        handle = await dbos.start_workflow(reader, writer_id)
        assert await handle.get_result() == values
        steps = [(s[0], s[1]) for s in await steps_of(db_url, handle.workflow_id)]
        assert steps == [(i, "DBOS.readStream") for i in range(1, len(values) + 2)]

        partial = await dbos.start_workflow(partial_reader, writer_id)
        assert await partial.get_result() == [values[:2], "after"]
        steps = [(s[0], s[1]) for s in await steps_of(db_url, partial.workflow_id)]
        assert steps == [(1, "DBOS.readStream"), (2, "DBOS.readStream"), (3, after.__qualname__)]

        # The stream grows after the readers are done; replays yield what they read then.
        encoded = dbos._require_executor("test").codec.encode("d", "py_pickle")
        await execute(
            db_url,
            'INSERT INTO {t}streams (workflow_uuid, key, value, "offset", function_id, '
            "serialization) VALUES (%s, 's', %s, %s, 100, 'py_pickle')",
            writer_id,
            encoded,
            len(values),
        )
        assert await read_all(dbos, writer_id, "s") == [*values, "d"]
        assert await reexecute(dbos, db_url, reader, handle.workflow_id) == values
        assert reads == 2
        assert await reexecute(dbos, db_url, partial_reader, partial.workflow_id) == [
            values[:2],
            "after",
        ]


async def test_a_cancelled_stream_reader_leaves_no_subscription_and_the_stream_intact(
    new_dbos: Callable[..., DBOS], notify: bool
) -> None:
    dbos = new_dbos(use_listen_notify=notify)
    done = trio.Event()

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", 1)
        await done.wait()
        await dbos.write_stream("s", 2)
        await dbos.close_stream("s")

    async with running(dbos):
        handle = await dbos.start_workflow(writer)
        key = stream_key(handle.workflow_id, "s")
        seen: list[Any] = []
        with trio.move_on_after(0.3) as scope:
            async for value in dbos.read_stream(handle.workflow_id, "s"):
                seen.append(value)
        assert scope.cancelled_caught
        assert seen == [1]
        await trio.lowlevel.checkpoint()  # let the abandoned generator be finalized
        assert not waiting_on(dbos, key)
        done.set()
        await handle.get_result()
        assert await read_all(dbos, handle.workflow_id, "s") == [1, 2]


async def test_concurrent_writes_from_one_workflow_get_contiguous_offsets(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def writer() -> None:
        async with trio.open_nursery() as nursery:
            for i in range(10):
                nursery.start_soon(dbos.write_stream, "s", i)
        await dbos.close_stream("s")

    async with running(dbos):
        handle = await dbos.start_workflow(writer)
        await handle.get_result()
        assert sorted(await read_all(dbos, handle.workflow_id, "s")) == list(range(10))
        rows = await query(
            db_url,
            'SELECT "offset", function_id FROM {t}streams WHERE workflow_uuid = %s '
            'ORDER BY "offset"',
            handle.workflow_id,
        )
        assert [r[0] for r in rows] == list(range(11))
        # Step ids follow the calls (1-10, then the close at 11), whatever the offsets.
        assert sorted(r[1] for r in rows) == list(range(1, 12))
        steps = [s[1] for s in await steps_of(db_url, handle.workflow_id)]
        assert steps == ["DBOS.writeStream"] * 10 + ["DBOS.closeStream"]
