"""Port of the official SDK's ``tests/test_patch.py``: ``patch`` and ``deprecate_patch``
across successive versions of one workflow, each a new ``DBOS`` on the same database."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from trio.testing import MockClock

from dbos_trio import DBOS, Config, DBOSUnexpectedStepError

Body = Callable[[DBOS, dict[str, Callable[[], Awaitable[int]]]], Awaitable[int]]


def version(url: str, body: Body) -> DBOS:
    """A DBOS whose workflow ``workflow`` runs ``body`` over steps one, two and three."""
    dbos = DBOS(Config(app_name="wf-tests", database_url=url, app_version="test_version"))

    @dbos.step(name="step_one")
    async def step_one() -> int:
        return 1

    @dbos.step(name="step_two")
    async def step_two() -> int:
        return 2

    @dbos.step(name="step_three")
    async def step_three() -> int:
        return 3

    steps = {"one": step_one, "two": step_two, "three": step_three}

    @dbos.workflow(name="workflow")
    async def workflow() -> int:
        return await body(dbos, steps)

    dbos.workflow_under_test = workflow  # type: ignore[attr-defined]
    return dbos


async def step_names(dbos: DBOS, workflow_id: str) -> list[str]:
    return [s.function_name for s in await dbos.list_workflow_steps(workflow_id)]


async def test_patch(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_patch.py::test_patch (and test_patch_async)"""

    async def v1(dbos: DBOS, s: dict[str, Callable[[], Awaitable[int]]]) -> int:
        return await s["one"]() + await s["two"]()

    async def v2(dbos: DBOS, s: dict[str, Callable[[], Awaitable[int]]]) -> int:
        first = await s["three"]() if await dbos.patch("v2") else await s["one"]()
        return first + await s["two"]()

    async def v3(dbos: DBOS, s: dict[str, Callable[[], Awaitable[int]]]) -> int:
        if await dbos.patch("v3"):
            first = await s["two"]()
        elif await dbos.patch("v2"):
            first = await s["three"]()
        else:
            first = await s["one"]()
        return first + await s["two"]()

    async def deprecated(dbos: DBOS, s: dict[str, Callable[[], Awaitable[int]]]) -> int:
        await dbos.deprecate_patch("v3")
        return await s["two"]() + await s["two"]()

    async def removed(dbos: DBOS, s: dict[str, Callable[[], Awaitable[int]]]) -> int:
        return await s["two"]() + await s["two"]()

    async def start(dbos: DBOS) -> str:
        handle = await dbos.start_workflow(dbos.workflow_under_test)  # type: ignore[attr-defined]
        await handle.get_result()
        return handle.workflow_id

    async def fork(dbos: DBOS, workflow_id: str, step: int) -> tuple[int, list[str]]:
        handle = await dbos.fork_workflow(workflow_id, step)
        result = await handle.get_result()
        return result, await step_names(dbos, handle.workflow_id)

    first = version(dbos_url, v1)
    async with first.launched():
        assert first.app_version == "test_version"
        v1_id = await start(first)

    second = version(dbos_url, v2)
    async with second.launched():
        v2_id = await start(second)
        assert await step_names(second, v2_id) == ["DBOS.patch-v2", "step_three", "step_two"]
        assert await fork(second, v2_id, 3) == (5, ["DBOS.patch-v2", "step_three", "step_two"])
        assert await fork(second, v1_id, 2) == (3, ["step_one", "step_two"])

    third = version(dbos_url, v3)
    async with third.launched():
        v3_id = await start(third)
        assert await step_names(third, v3_id) == ["DBOS.patch-v3", "step_two", "step_two"]
        assert (await fork(third, v3_id, 3))[0] == 4
        assert await fork(third, v2_id, 3) == (5, ["DBOS.patch-v2", "step_three", "step_two"])
        assert await fork(third, v1_id, 2) == (3, ["step_one", "step_two"])

    fourth = version(dbos_url, deprecated)
    async with fourth.launched():
        v4_id = await start(fourth)
        assert await step_names(fourth, v4_id) == ["step_two", "step_two"]
        assert await fork(fourth, v4_id, 3) == (4, ["step_two", "step_two"])
        assert await fork(fourth, v3_id, 3) == (4, ["DBOS.patch-v3", "step_two", "step_two"])
        for old, step in ((v2_id, 3), (v1_id, 2)):
            handle = await fourth.fork_workflow(old, step)
            with pytest.raises(DBOSUnexpectedStepError):
                await handle.get_result()

    fifth = version(dbos_url, removed)
    async with fifth.launched():
        assert await fork(fifth, v4_id, 3) == (4, ["step_two", "step_two"])
        for old, step in ((v3_id, 3), (v2_id, 3), (v1_id, 2)):
            handle = await fifth.fork_workflow(old, step)
            with pytest.raises(DBOSUnexpectedStepError):
                await handle.get_result()
