"""Patching: ``dbos.patch`` / ``dbos.deprecate_patch`` replay every recorded history.

The workflow here has three generations of code, chosen by ``code.generation``: 0 (before
the patch: step ``old``), 1 (patched: ``if await dbos.patch("fix"): new else old``) and 2
(the patch deprecated: ``await dbos.deprecate_patch("fix"); new``). Each generation's
executions are re-run from their checkpoints by later generations, as recovery after an
upgrade would, and must replay without running a step body again and without a
nondeterminism error. The markers are the official SDK's (``DBOS.patch-<name>``, no
output), checked row by row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, DBOSException, SetWorkflowID

from support.backends import steps_of
from support.dbos_fixtures import reexecute


class Code:
    def __init__(self) -> None:
        self.generation = 0
        self.ran: Counter[str] = Counter()


def build(make_dbos: Callable[..., DBOS]) -> tuple[DBOS, Code, Any]:
    dbos = make_dbos()
    code = Code()

    @dbos.step(name="old")
    async def old(x: int) -> str:
        code.ran["old"] += 1
        return f"old-{x}"

    @dbos.step(name="new")
    async def new(x: int) -> str:
        code.ran["new"] += 1
        return f"new-{x}"

    @dbos.step(name="after")
    async def after() -> str:
        code.ran["after"] += 1
        return "after"

    @dbos.workflow(name="patched")
    async def patched(x: int) -> list[str]:
        if code.generation == 0:
            first = await old(x)
        elif code.generation == 1:
            first = await new(x) if await dbos.patch("fix") else await old(x)
        else:
            await dbos.deprecate_patch("fix")
            first = await new(x)
        return [first, await after()]

    return dbos, code, patched


async def test_a_new_execution_records_the_marker_and_runs_the_new_code(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, code, patched = build(make_dbos)
    code.generation = 1
    async with dbos.launched():
        with SetWorkflowID("fresh"):
            assert await patched(1) == ["new-1", "after"]
    rows = await steps_of(dbos_url, "fresh", "function_id, function_name, output, error")
    assert rows == [
        (1, "DBOS.patch-fix", None, None),
        (2, "new", rows[1][2], None),
        (3, "after", rows[2][2], None),
    ]


async def test_an_execution_recorded_before_the_patch_replays_the_old_branch(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, code, patched = build(make_dbos)
    async with dbos.launched():
        with SetWorkflowID("before"):
            assert await patched(2) == ["old-2", "after"]
        code.generation = 1
        ran = code.ran.copy()
        assert await reexecute(dbos, dbos_url, patched, "before") == ["old-2", "after"]
        assert code.ran == ran  # every step replayed, none ran again
    names = [row[1] for row in await steps_of(dbos_url, "before")]
    assert names == ["old", "after"]  # no marker written into an unpatched history


async def test_a_patched_execution_replays_under_the_patch_and_under_its_deprecation(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, code, patched = build(make_dbos)
    code.generation = 1
    async with dbos.launched():
        with SetWorkflowID("patched"):
            await patched(3)
        ran = code.ran.copy()
        assert await reexecute(dbos, dbos_url, patched, "patched") == ["new-3", "after"]
        code.generation = 2
        assert await reexecute(dbos, dbos_url, patched, "patched") == ["new-3", "after"]
        assert code.ran == ran
    names = [row[1] for row in await steps_of(dbos_url, "patched")]
    assert names == ["DBOS.patch-fix", "new", "after"]


async def test_deprecate_patch_writes_no_marker_and_replays_executions_without_one(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, code, patched = build(make_dbos)
    code.generation = 2
    async with dbos.launched():
        with SetWorkflowID("deprecated"):
            assert await patched(4) == ["new-4", "after"]
        ran = code.ran.copy()
        assert await reexecute(dbos, dbos_url, patched, "deprecated") == ["new-4", "after"]
        assert code.ran == ran
    names = [row[1] for row in await steps_of(dbos_url, "deprecated")]
    assert names == ["new", "after"]


async def test_old_code_replaying_a_patched_history_fails_loudly_not_wrongly(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, code, patched = build(make_dbos)
    code.generation = 1
    async with dbos.launched():
        with SetWorkflowID("rollback"):
            await patched(5)
        code.generation = 0
        with pytest.raises(DBOSException, match=r"DBOS\.patch-fix"):
            await reexecute(dbos, dbos_url, patched, "rollback")


async def test_patches_in_a_durable_nursery_take_their_ids_in_turn_order(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()
    patched_generation = {"on": False}
    ran: Counter[str] = Counter()

    @dbos.step(name="work")
    async def work(i: int, delay: float) -> int:
        ran[f"work-{i}"] += 1
        await trio.sleep(delay)
        return i

    @dbos.workflow(name="fan")
    async def fan(delays: list[float]) -> list[Any]:
        out: list[Any] = [None] * len(delays)

        async def task(i: int) -> None:
            if patched_generation["on"]:
                flag = await dbos.patch(f"p{i}")
            else:
                flag = None
            out[i] = (flag, await work(i, delays[i]))

        async with dbos.open_nursery() as nursery:
            for i in range(len(delays)):
                nursery.start_soon(task, i)
        return out

    async with dbos.launched():
        with SetWorkflowID("fan-old"):
            assert await fan([0.03, 0.0, 0.01]) == [(None, 0), (None, 1), (None, 2)]
        patched_generation["on"] = True
        with SetWorkflowID("fan-new"):
            assert await fan([0.0, 0.03, 0.01]) == [(True, 0), (True, 1), (True, 2)]
        before = ran.copy()
        assert await reexecute(dbos, dbos_url, fan, "fan-old") == [
            (False, 0),
            (False, 1),
            (False, 2),
        ]
        assert await reexecute(dbos, dbos_url, fan, "fan-new") == [
            (True, 0),
            (True, 1),
            (True, 2),
        ]
        assert ran == before
    names = [row[1] for row in await steps_of(dbos_url, "fan-new")]
    assert sorted(names) == ["DBOS.patch-p0", "DBOS.patch-p1", "DBOS.patch-p2"] + ["work"] * 3
    assert [row[1] for row in await steps_of(dbos_url, "fan-old")] == ["work"] * 3


async def test_patch_is_refused_outside_a_workflow_body_and_for_an_empty_name(
    make_dbos: Callable[..., DBOS],
) -> None:
    dbos = make_dbos()

    @dbos.step()
    async def inside() -> None:
        await dbos.patch("x")

    @dbos.workflow()
    async def calls_step() -> None:
        await inside()

    @dbos.workflow()
    async def bad_name() -> None:
        await dbos.patch("")

    async with dbos.launched():
        with pytest.raises(DBOSException, match="outside a workflow"):
            await dbos.patch("x")
        with pytest.raises(DBOSException, match="inside a step"):
            await calls_step()
        with pytest.raises(Exception, match="name"):
            await bad_name()
