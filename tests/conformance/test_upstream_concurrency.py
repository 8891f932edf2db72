"""Port of the official SDK's ``tests/test_concurrency.py``: concurrent durable calls in
one workflow (``dbos.gather`` / ``dbos.open_nursery`` for ``asyncio.gather``) number their
steps in call order, so serial and concurrent runs record the same history."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio
from trio.testing import MockClock

from dbos_trio import DBOS, SetWorkflowID


async def run_all(
    dbos: DBOS, concurrent: bool, calls: list[Callable[[], Awaitable[Any]]]
) -> list[Any]:
    if concurrent:
        return await dbos.gather(*(call() for call in calls))
    return [await call() for call in calls]


async def same_history(dbos: DBOS, one: str, two: str) -> None:
    serial = await dbos.list_workflow_steps(one)
    concurrent = await dbos.list_workflow_steps(two)

    def shape(step: Any) -> tuple[Any, ...]:
        # A durable sleep's output is its wake-up time, which differs between runs.
        output = None if step.function_name == "DBOS.sleep" else step.output
        return (step.function_id, step.function_name, output)

    assert [shape(s) for s in serial] == [shape(s) for s in concurrent]


async def test_concurrent_workflows(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_concurrency.py::test_concurrent_workflows (the same id at once)"""
    runs = {"n": 0}

    @dbos.workflow()
    async def slow(value: str) -> str:
        runs["n"] += 1
        await dbos.sleep(1)
        return value

    async with dbos.launched():
        results: list[str] = []
        async with trio.open_nursery() as nursery:
            for _ in range(2):

                async def call() -> None:
                    with SetWorkflowID("same"):
                        results.append(await slow("v"))

                nursery.start_soon(call)
        assert results == ["v", "v"]
        assert runs["n"] == 1


async def test_concurrent_getevent(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_concurrency.py::test_concurrent_getevent"""

    @dbos.workflow()
    async def setter(name: str, value: str) -> str:
        await dbos.set_event(name, value)
        return value

    async with dbos.launched():
        got: list[Any] = []
        async with trio.open_nursery() as nursery:
            for _ in range(2):

                async def wait_for_it() -> None:
                    got.append(await dbos.get_event("wf", "test_event", 5))

                nursery.start_soon(wait_for_it)
            await trio.sleep(0.1)
            with SetWorkflowID("wf"):
                await setter("test_event", "test message")
        assert got == ["test message", "test message"]


async def test_gather_manysteps(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_concurrency.py::test_gather_manysteps"""

    @dbos.step()
    async def echo(value: str) -> str:
        return value

    @dbos.step(retries_allowed=True, max_attempts=5, interval_seconds=0.01, backoff_rate=1)
    async def third_time(value: str) -> str:
        status = dbos.step_status
        assert status is not None and status.current_attempt is not None
        if status.current_attempt < 2:
            raise RuntimeError("Not yet")
        return value

    @dbos.workflow()
    async def many(concurrent: bool) -> list[Any]:
        calls: list[Callable[[], Awaitable[Any]]] = []
        for index in range(20):
            calls.append(lambda i=index: echo(f"s{i}"))
            calls.append(lambda i=index: third_time(f"r{i}"))
            calls.append(lambda i=index: dbos.run_step(lambda: f"run{i}", name="runStep"))
        return await run_all(dbos, concurrent, calls)

    async with dbos.launched():
        with SetWorkflowID("serial"):
            serial = await many(False)
        with SetWorkflowID("concurrent"):
            concurrent = await many(True)
        assert serial == concurrent
        await same_history(dbos, "serial", "concurrent")


async def test_gather_many_send_async(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_concurrency.py::test_gather_many_send_async"""

    @dbos.workflow()
    async def many(concurrent: bool) -> None:
        me = dbos.workflow_id
        assert me is not None
        calls = [(lambda i=index: dbos.send(me, f"msg_{i}", f"topic_{i}")) for index in range(30)]
        await run_all(dbos, concurrent, calls)
        for index in range(30):
            assert await dbos.recv(f"topic_{index}") == f"msg_{index}"

    async with dbos.launched():
        with SetWorkflowID("serial"):
            await many(False)
        with SetWorkflowID("concurrent"):
            await many(True)
        await same_history(dbos, "serial", "concurrent")


async def test_gather_many_write_stream(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_concurrency.py::test_gather_many_write_stream"""

    @dbos.workflow()
    async def many(concurrent: bool) -> None:
        calls = [(lambda i=index: dbos.write_stream("s", i)) for index in range(30)]
        await run_all(dbos, concurrent, calls)
        await dbos.close_stream("s")

    async with dbos.launched():
        for workflow_id, concurrent in (("serial", False), ("concurrent", True)):
            with SetWorkflowID(workflow_id):
                await many(concurrent)
        serial = [v async for v in dbos.read_stream("serial", "s")]
        concurrent_values = [v async for v in dbos.read_stream("concurrent", "s")]
        assert serial == list(range(30))
        assert sorted(concurrent_values) == list(range(30))
        await same_history(dbos, "serial", "concurrent")


async def test_gather_many_set_event(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_concurrency.py::test_gather_many_set_event"""

    @dbos.workflow()
    async def many(concurrent: bool) -> None:
        calls = [(lambda i=index: dbos.set_event(f"k{i}", i)) for index in range(30)]
        await run_all(dbos, concurrent, calls)

    async with dbos.launched():
        for workflow_id, concurrent in (("serial", False), ("concurrent", True)):
            with SetWorkflowID(workflow_id):
                await many(concurrent)
        expected = {f"k{i}": i for i in range(30)}
        assert await dbos.get_all_events("serial") == expected
        assert await dbos.get_all_events("concurrent") == expected
        await same_history(dbos, "serial", "concurrent")


async def test_high_async_concurrency(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_concurrency.py::test_high_async_concurrency"""

    @dbos.workflow()
    async def sleeper(value: int) -> int:
        await dbos.sleep(1)
        return value

    async with dbos.launched():
        handles = [await dbos.start_workflow(sleeper, i) for i in range(100)]
        assert await dbos.wait_all(handles) == list(range(100))


async def test_gather_distinct_steps_deterministic_order(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_concurrency.py::test_gather_distinct_steps_deterministic_order"""

    @dbos.step()
    async def step_a() -> str:
        await trio.sleep(0.05)
        return "a"

    @dbos.step()
    async def step_b() -> str:
        await trio.sleep(0.001)
        return "b"

    @dbos.step()
    async def step_c() -> str:
        await trio.sleep(0.02)
        return "c"

    @dbos.workflow()
    async def gathered() -> list[str]:
        return await dbos.gather(step_a(), step_b(), step_c())

    async with dbos.launched():
        for index in range(10):
            with SetWorkflowID(f"wf{index}"):
                assert await gathered() == ["a", "b", "c"]
            steps = await dbos.list_workflow_steps(f"wf{index}")
            assert [s.function_name.rsplit(".", 1)[-1] for s in steps] == [
                "step_a",
                "step_b",
                "step_c",
            ]


async def test_gather_many_write_stream_from_step(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_concurrency.py::test_gather_many_write_stream_from_step"""

    @dbos.step()
    async def write(value: int) -> None:
        await dbos.write_stream("s", value)

    @dbos.workflow()
    async def many(concurrent: bool) -> None:
        await run_all(dbos, concurrent, [(lambda i=index: write(i)) for index in range(20)])
        await dbos.close_stream("s")

    async with dbos.launched():
        for workflow_id, concurrent in (("serial", False), ("concurrent", True)):
            with SetWorkflowID(workflow_id):
                await many(concurrent)
        assert [v async for v in dbos.read_stream("serial", "s")] == list(range(20))
        assert sorted([v async for v in dbos.read_stream("concurrent", "s")]) == list(range(20))
        await same_history(dbos, "serial", "concurrent")


async def test_gather_manythings(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_concurrency.py::test_gather_manythings (mixed durable calls)"""

    @dbos.step()
    async def echo(value: str) -> str:
        return value

    @dbos.workflow()
    async def child(value: str) -> str:
        return value + "-child"

    @dbos.workflow()
    async def many(concurrent: bool) -> list[Any]:
        me = dbos.workflow_id
        assert me is not None
        calls: list[Callable[[], Awaitable[Any]]] = []
        for index in range(10):
            calls.append(lambda i=index: echo(f"s{i}"))
            calls.append(lambda i=index: child(f"c{i}"))
            calls.append(lambda i=index: dbos.set_event(f"e{i}", i))
            calls.append(lambda i=index: dbos.send(me, i, f"t{i}"))
            calls.append(lambda: dbos.sleep(0.01))
        results = await run_all(dbos, concurrent, calls)
        return [r for r in results if r is not None]

    async with dbos.launched():
        with SetWorkflowID("serial"):
            serial = await many(False)
        with SetWorkflowID("concurrent"):
            concurrent = await many(True)
        assert serial == concurrent
        await same_history(dbos, "serial", "concurrent")
