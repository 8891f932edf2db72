"""Port of the official SDK's ``tests/test_scheduler_decorator.py``: ``@dbos.scheduled``
workflows fire on their cron, keep firing after a failure, and run once per slot."""

from __future__ import annotations

from datetime import datetime

import pytest
import trio
from trio.testing import MockClock

from dbos_trio import DBOS, DBOSException


class ScheduledFailure(Exception):
    pass


async def test_scheduled_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler_decorator.py::test_scheduled_workflow (and the async one)"""
    fired: list[datetime] = []
    twice = trio.Event()

    @dbos.scheduled("* * * * * *")
    @dbos.workflow()
    async def every_second(scheduled: datetime, actual: datetime) -> None:
        fired.append(scheduled)
        if len(fired) >= 2:
            twice.set()

    async with dbos.launched():
        await twice.wait()
    assert fired[1] > fired[0]


async def test_scheduled_workflow_exception(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler_decorator.py::test_scheduled_workflow_exception"""
    fired = {"n": 0}
    twice = trio.Event()

    @dbos.scheduled("* * * * * *")
    @dbos.workflow()
    async def failing(scheduled: datetime, actual: datetime) -> None:
        fired["n"] += 1
        if fired["n"] >= 2:
            twice.set()
        raise ScheduledFailure("error")

    async with dbos.launched():
        await twice.wait()
        failed = await dbos.list_workflows(status="ERROR")
        assert len(failed) >= 1


async def test_scheduler_oaoo(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler_decorator.py::test_scheduler_oaoo (one run per slot)"""
    runs: dict[str, int] = {}
    steps = {"n": 0}
    enough = trio.Event()

    @dbos.step()
    async def a_step() -> None:
        steps["n"] += 1

    @dbos.scheduled("* * * * * *")
    @dbos.workflow()
    async def every_second(scheduled: datetime, actual: datetime) -> None:
        await a_step()
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        runs[workflow_id] = runs.get(workflow_id, 0) + 1
        if len(runs) >= 3:
            enough.set()

    async with dbos.launched():
        await enough.wait()
        assert set(runs.values()) == {1}
        assert steps["n"] == sum(runs.values())
        listed = {w.workflow_id for w in await dbos.list_workflows()}
        assert set(runs) <= listed


async def test_bad_schedule(dbos: DBOS) -> None:
    """upstream: tests/test_scheduler_decorator.py::test_bad_schedule"""
    with pytest.raises(DBOSException):

        @dbos.scheduled("*/invalid * * * * *")
        @dbos.workflow()
        async def never(scheduled: datetime, actual: datetime) -> None:
            return None
