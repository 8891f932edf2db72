"""``dbos.now()``, ``dbos.random()``, ``dbos.uuid4()``: read once, recorded, replayed.

A workflow branches on a random number and keeps the time and a fresh id; re-executed
from its checkpoints (as recovery would) it gets the same three values and takes the same
branch, and ``check`` replays it. A version that reads the random number with the
standard library instead is a divergence ``check`` explains in those words.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from dbos_trio import DBOS, DBOSNotLaunchedError, SetWorkflowID
from dbos_trio.testing import check_upgrade

from support.backends import steps_of
from support.dbos_fixtures import reexecute


def build(make_dbos: Callable[..., DBOS], durable: bool) -> tuple[DBOS, Any]:
    dbos = make_dbos()

    @dbos.step(name="heads")
    async def heads() -> str:
        return "heads"

    @dbos.step(name="tails")
    async def tails() -> str:
        return "tails"

    @dbos.workflow(name="coin")
    async def coin() -> tuple[float, float, str, str]:
        when = await dbos.now()
        draw = await dbos.random() if durable else random.random()
        key = await dbos.uuid4()
        side = await heads() if draw < 0.5 else await tails()
        return when, draw, key, side

    return dbos, coin


async def test_the_values_are_recorded_steps_and_a_re_execution_gets_them_back(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, coin = build(make_dbos, durable=True)
    async with dbos.launched():
        with SetWorkflowID("flip"):
            first = await coin()
        for _ in range(5):
            assert await reexecute(dbos, dbos_url, coin, "flip") == first
        outside = await dbos.uuid4()  # outside a workflow: a plain value, nothing recorded
    when, draw, key, side = first
    assert when > 1.7e9 and 0 <= draw < 1 and len(key) == 36 and key != outside
    names = [name for _, name, _ in await steps_of(dbos_url, "flip")]
    assert names == ["DBOS.now", "DBOS.random", "DBOS.uuid4", side]
    report = await check_upgrade(dbos, dbos_url, finished=5)
    assert report.by_id()["flip"].verdict == "compatible", report.summary()


async def test_check_explains_a_value_read_outside_the_record(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, coin = build(make_dbos, durable=True)
    async with dbos.launched():
        with SetWorkflowID("flip"):
            await coin()
    plain, _ = build(make_dbos, durable=False)
    report = await check_upgrade(plain, dbos_url, finished=5)
    result = report.by_id()["flip"]
    assert result.verdict == "diverged"
    assert result.recorded is not None and result.recorded.name == "DBOS.random"
    assert "the recorded run read random() durably here (dbos.random())" in result.message


async def test_outside_launched_the_helpers_say_so(make_dbos: Callable[..., DBOS]) -> None:
    dbos, _ = build(make_dbos, durable=True)
    with pytest.raises(DBOSNotLaunchedError):
        await dbos.now()
