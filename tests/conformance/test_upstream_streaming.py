"""Port of the official SDK's ``tests/test_streaming.py``: writing, closing and reading
streams, offsets, termination, timeouts, clients and checkpointed reads."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    Client,
    DBOSException,
    DBOSNonExistentWorkflowError,
    DBOSStreamTimeoutError,
    SetWorkflowID,
)

from support.dbos_fixtures import reexecute

VALUES: list[Any] = ["hello", 42, {"key": "value"}, [1, 2, 3], None]


async def read_all(dbos: DBOS, workflow_id: str, key: str, **options: Any) -> list[Any]:
    return [value async for value in dbos.read_stream(workflow_id, key, **options)]


async def test_basic_stream_write_read(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_basic_stream_write_read"""

    @dbos.workflow()
    async def writer() -> None:
        for value in VALUES:
            await dbos.write_stream("s", value)
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        assert await read_all(dbos, "wf", "s") == VALUES
        assert await read_all(dbos, "wf", "s") == VALUES  # reading does not consume


async def test_stream_read_offset(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_read_offset"""

    @dbos.workflow()
    async def writer() -> None:
        for index in range(5):
            await dbos.write_stream("s", index)
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        assert await read_all(dbos, "wf", "s", offset=0) == [0, 1, 2, 3, 4]
        assert await read_all(dbos, "wf", "s", offset=2) == [2, 3, 4]
        assert await read_all(dbos, "wf", "s", offset=4) == [4]
        assert await read_all(dbos, "wf", "s", offset=5) == []
        assert await read_all(dbos, "wf", "s", offset=100) == []


async def test_read_stream_offset(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_read_stream_offset"""

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", "v0")
        await dbos.write_stream("s", "v1")
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        assert await dbos.read_stream_offset("wf", "s", 1) == "v1"


async def test_unclosed_stream(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_unclosed_stream"""

    class WriterError(Exception):
        pass

    @dbos.workflow()
    async def writer() -> None:
        for value in VALUES:
            await dbos.write_stream("s", value)

    @dbos.workflow()
    async def failing_writer() -> None:
        for value in VALUES:
            await dbos.write_stream("s", value)
        raise WriterError

    async with dbos.launched():
        with SetWorkflowID("ok"):
            await writer()
        assert await read_all(dbos, "ok", "s") == VALUES
        with SetWorkflowID("bad"), pytest.raises(WriterError):
            await failing_writer()
        assert await read_all(dbos, "bad", "s") == VALUES


async def test_stream_termination_while_reader_blocked(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_streaming.py::test_stream_termination_while_reader_blocked"""
    finish = trio.Event()

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", "first")
        await finish.wait()

    async with dbos.launched():
        with SetWorkflowID("wf"):
            handle = await dbos.start_workflow(writer)
        seen: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def read() -> None:
                seen.extend(await read_all(dbos, "wf", "s"))

            nursery.start_soon(read)
            await trio.sleep(1)
            finish.set()
        await handle.get_result()
        assert seen == ["first"]


async def test_stream_concurrent_write_read(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_concurrent_write_read"""

    @dbos.workflow()
    async def writer() -> None:
        for index in range(10):
            await dbos.write_stream("s", index)
            await dbos.sleep(0.1)
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await dbos.start_workflow(writer)
        assert await read_all(dbos, "wf", "s") == list(range(10))


async def test_stream_multiple_keys(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_multiple_keys"""

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("a", 1)
        await dbos.write_stream("b", "x")
        await dbos.write_stream("a", 2)
        await dbos.close_stream("a")
        await dbos.close_stream("b")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        assert await read_all(dbos, "wf", "a") == [1, 2]
        assert await read_all(dbos, "wf", "b") == ["x"]


async def test_stream_empty_stream(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_empty_stream"""

    @dbos.workflow()
    async def writer() -> None:
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        assert await read_all(dbos, "wf", "s") == []


async def test_stream_error_cases(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_error_cases"""
    async with dbos.launched():
        with pytest.raises(DBOSException, match="must be called from within a workflow"):
            await dbos.write_stream("s", "value")
        with pytest.raises(DBOSException, match="must be called from within a workflow"):
            await dbos.close_stream("s")


async def test_stream_workflow_recovery(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_workflow_recovery (a replay writes once)"""

    @dbos.step()
    async def noop() -> None:
        return None

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", "a")
        await noop()
        await dbos.write_stream("s", "b")
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        with SetWorkflowID("wf"):
            await writer()
        assert await read_all(dbos, "wf", "s") == ["a", "b"]


async def test_stream_write_from_step(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_write_from_step"""

    @dbos.step()
    async def write(value: str) -> None:
        await dbos.write_stream("s", value)

    @dbos.workflow()
    async def writer() -> None:
        await write("from-step")
        await dbos.write_stream("s", "from-workflow")
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        assert await read_all(dbos, "wf", "s") == ["from-step", "from-workflow"]


async def test_stream_large_data(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_large_data"""
    big = "x" * 1_000_000

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", big)
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        assert await read_all(dbos, "wf", "s") == [big]


async def test_client_read_stream(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_client_read_stream (and _offset)"""

    @dbos.workflow()
    async def writer() -> None:
        for value in VALUES:
            await dbos.write_stream("s", value)
        await dbos.close_stream("s")

    async with dbos.launched(), Client(dbos_url) as client:
        with SetWorkflowID("wf"):
            await writer()
        assert [v async for v in client.read_stream("wf", "s")] == VALUES
        assert await client.read_stream_offset("wf", "s", 2) == {"key": "value"}


async def test_read_stream_nonexistent_workflow(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_streaming.py::test_read_stream_nonexistent_workflow"""
    async with dbos.launched(), Client(dbos_url) as client:
        with pytest.raises(DBOSNonExistentWorkflowError):
            await read_all(dbos, "missing", "s")
        with pytest.raises(DBOSNonExistentWorkflowError):
            [v async for v in client.read_stream("missing", "s")]


async def test_read_stream_timeout(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_read_stream_timeout"""
    finish = trio.Event()

    @dbos.workflow()
    async def silent() -> None:
        await finish.wait()

    async with dbos.launched():
        with SetWorkflowID("wf"):
            handle = await dbos.start_workflow(silent)
        with pytest.raises(DBOSStreamTimeoutError):
            await read_all(dbos, "wf", "s", timeout_seconds=0.3)
        finish.set()
        await handle.get_result()


async def test_workflow_read_stream_checkpointing(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_workflow_read_stream_checkpointing"""
    runs = {"reader": 0}

    @dbos.workflow()
    async def writer() -> None:
        for value in ["a", None, {"k": "v"}, b"bytes"]:
            await dbos.write_stream("s", value)

    @dbos.workflow()
    async def reader(target: str) -> list[Any]:
        runs["reader"] += 1
        return await read_all(dbos, target, "s")

    async with dbos.launched():
        with SetWorkflowID("writer"):
            await writer()
        with SetWorkflowID("reader"):
            assert await reader("writer") == ["a", None, {"k": "v"}, b"bytes"]
        steps = await dbos.list_workflow_steps("reader")
        assert {s.function_name for s in steps} == {"DBOS.readStream"}
        forked = await dbos.fork_workflow("reader", len(steps) + 1)
        assert await forked.get_result() == ["a", None, {"k": "v"}, b"bytes"]


class CustomValue:
    """A user class in a stream: pickled and read back as itself."""

    def __init__(self, value: str) -> None:
        self.value = value


class AmbiguousTruth:
    """Like a DataFrame: == returns something whose truth value raises."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __eq__(self, other: object) -> Any:
        return self

    def __bool__(self) -> bool:
        raise ValueError("the truth value is ambiguous")

    __hash__ = None  # type: ignore[assignment]


async def test_stream_interleaved_operations(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_interleaved_operations"""

    @dbos.workflow()
    async def interleaved() -> None:
        for key, value in (("s1", "1a"), ("s2", "2a"), ("s1", "1b"), ("s3", "3a"), ("s2", "2b")):
            await dbos.write_stream(key, value)
        await dbos.write_stream("s1", "1c")
        for key in ("s1", "s2", "s3"):
            await dbos.close_stream(key)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await interleaved()
        assert await read_all(dbos, "wf", "s1") == ["1a", "1b", "1c"]
        assert await read_all(dbos, "wf", "s2") == ["2a", "2b"]
        assert await read_all(dbos, "wf", "s3") == ["3a"]


async def test_stream_serialization_types(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_stream_serialization_types"""
    values: list[Any] = ["string", 42, 3.14, True, False, None, [1, 2, 3], {"n": {"d": "v"}}]
    values += [(1, 2, 3), {1, 2, 3}]

    @dbos.workflow()
    async def writer() -> None:
        for value in values:
            await dbos.write_stream("s", value)
        await dbos.write_stream("s", CustomValue("test"))
        await dbos.close_stream("s")

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await writer()
        read = await read_all(dbos, "wf", "s")
        assert read[:-1] == values
        assert isinstance(read[-1], CustomValue) and read[-1].value == "test"


async def test_stream_array_like_values(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_streaming.py::test_stream_array_like_values"""

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", AmbiguousTruth("a"))
        await dbos.write_stream("s", AmbiguousTruth("b"))
        await dbos.close_stream("s")

    @dbos.workflow()
    async def reader(target: str) -> list[str]:
        return [v.tag for v in await read_all(dbos, target, "s")]

    async with dbos.launched(), Client(dbos_url) as client:
        with SetWorkflowID("wf"):
            await writer()
        assert [v.tag for v in await read_all(dbos, "wf", "s")] == ["a", "b"]
        assert [v.tag async for v in client.read_stream("wf", "s")] == ["a", "b"]
        assert (await dbos.read_stream_offset("wf", "s", 1)).tag == "b"
        with SetWorkflowID("reader"):
            assert await reader("wf") == ["a", "b"]
        with SetWorkflowID("reader"):
            assert await reader("wf") == ["a", "b"]
        steps = await dbos.list_workflow_steps("wf")
        assert [s.function_name for s in steps] == [
            "DBOS.writeStream",
            "DBOS.writeStream",
            "DBOS.closeStream",
        ]


async def test_client_read_stream_workflow_termination(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_streaming.py::test_client_read_stream_workflow_termination"""

    @dbos.workflow()
    async def writer() -> None:
        for value in ("t1", "t2", "t3"):
            await dbos.write_stream("s", value)

    async with dbos.launched(), Client(dbos_url) as client:
        with SetWorkflowID("wf"):
            await writer()
        assert [v async for v in client.read_stream("wf", "s")] == ["t1", "t2", "t3"]


async def test_workflow_read_stream_timeout_is_checkpointed(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_streaming.py::test_workflow_read_stream_timeout_is_checkpointed

    As dbos 3.4.0: the timeout is the read's recorded outcome (a ``DBOS.readStream`` step
    whose error is the ``DBOSStreamTimeoutError``, in the application's serializer even for
    a portable workflow), so a replay raises it again at once instead of waiting again.
    """
    finish = trio.Event()
    runs = {"reader": 0}

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", "only")
        await finish.wait()

    async def read_until_timeout(target: str) -> list[Any]:
        seen: list[Any] = []
        try:
            async for value in dbos.read_stream(target, "s", timeout_seconds=1.0):
                seen.append(value)
        except DBOSStreamTimeoutError:
            seen.append("timed out")
        return seen

    @dbos.workflow()
    async def reader(target: str) -> list[Any]:
        runs["reader"] += 1
        return await read_until_timeout(target)

    @dbos.workflow(serialization="portable")
    async def portable_reader(target: str) -> list[Any]:
        return await read_until_timeout(target)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            writing = await dbos.start_workflow(writer)
        with SetWorkflowID("reader"):
            assert await reader("wf") == ["only", "timed out"]
        steps = await dbos.list_workflow_steps("reader")
        assert [s.function_name for s in steps] == ["DBOS.readStream"] * 2
        assert steps[0].error is None and steps[0].output == "only"
        assert steps[1].output is None
        assert isinstance(steps[1].error, DBOSStreamTimeoutError)

        # Replayed from its checkpoints while the writer is still silent: a live re-read
        # would wait out the timeout again before raising.
        began = trio.current_time()
        assert await reexecute(dbos, dbos_url, reader, "reader") == ["only", "timed out"]
        assert runs["reader"] == 2
        assert trio.current_time() - began < 1.0
        forked = await dbos.fork_workflow("reader", 3)  # both reads copied, then replayed
        began = trio.current_time()
        assert await forked.get_result() == ["only", "timed out"]
        assert trio.current_time() - began < 1.0

        # A portable workflow's timeout is recorded in the application's serializer too,
        # so its replay raises the same exception type again.
        with SetWorkflowID("portable"):
            assert await portable_reader("wf") == ["only", "timed out"]
        began = trio.current_time()
        assert await reexecute(dbos, dbos_url, portable_reader, "portable") == [
            "only",
            "timed out",
        ]
        assert trio.current_time() - began < 1.0
        finish.set()
        await writing.get_result()


async def test_read_stream_notices_cancellation(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_streaming.py::test_read_stream_notices_cancellation"""
    from dbos_trio import DBOSAwaitedWorkflowCancelledError

    finish, entered = trio.Event(), trio.Event()

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", "v0")
        await finish.wait()

    @dbos.workflow()
    async def reader(target: str) -> list[Any]:
        seen: list[Any] = []
        async for value in dbos.read_stream(target, "s"):
            seen.append(value)
            entered.set()
        return seen

    async with dbos.launched():
        with SetWorkflowID("wf"):
            writing = await dbos.start_workflow(writer)
        with SetWorkflowID("reader"):
            reading = await dbos.start_workflow(reader, "wf")
        await entered.wait()
        await dbos.cancel_workflow("reader")
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await reading.get_result()
        finish.set()
        await writing.get_result()


async def test_client_read_stream_offset(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_streaming.py::test_client_read_stream_offset"""

    @dbos.workflow()
    async def writer() -> None:
        for index in range(5):
            await dbos.write_stream("s", index)
        await dbos.close_stream("s")

    async with dbos.launched(), Client(dbos_url) as client:
        with SetWorkflowID("wf"):
            await writer()
        assert [v async for v in client.read_stream("wf", "s", offset=2)] == [2, 3, 4]
        assert [v async for v in client.read_stream("wf", "s", offset=5)] == []
        assert await client.read_stream_offset("wf", "s", 4) == 4


async def test_client_read_stream_from_workflow_is_not_checkpointed(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_streaming.py::test_client_read_stream_from_workflow_is_not_checkpointed"""  # noqa: E501
    # A client reads as an outside observer, whoever calls it: a read from inside a
    # workflow records no step.
    client = Client(dbos_url)

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", "v0")
        await dbos.close_stream("s")

    @dbos.workflow()
    async def reader(target: str) -> list[Any]:
        return [value async for value in client.read_stream(target, "s")]

    async with dbos.launched(), client:
        with SetWorkflowID("wf"):
            await writer()
        with SetWorkflowID("reader"):
            assert await reader("wf") == ["v0"]
        assert await dbos.list_workflow_steps("reader") == []
