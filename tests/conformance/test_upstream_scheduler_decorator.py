"""Port of the official SDK's ``tests/test_scheduler_decorator.py``: ``@dbos.scheduled``
workflows fire on their cron, keep firing after a failure, and run once per slot."""

from __future__ import annotations

from datetime import datetime
from typing import Any

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


async def test_scheduled_workflow_uses_latest_application_version(
    make_dbos: Any, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_scheduler_decorator.py::test_scheduled_workflow_uses_latest_application_version

    A newer version is registered by launching an executor of it (upstream writes the
    version row through its private ``_sys_db``)."""  # noqa: E501
    newer = make_dbos(app_version="newer")
    dbos = make_dbos()  # v1
    twice = trio.Event()

    @dbos.scheduled("* * * * * *")
    @dbos.workflow()
    async def ticking(scheduled: datetime, actual: datetime) -> None:
        return None

    async with dbos.launched():
        pass  # v1 registered first
    async with newer.launched():
        pass  # then the newer one: the latest
    async with dbos.launched():
        for _ in range(600):
            scheduled = await dbos.list_workflows(name=ticking.__qualname__)
            if len(scheduled) >= 2:
                twice.set()
                break
            await trio.sleep(0.5)
        assert twice.is_set()
        # Enqueued for the application's latest version, not this executor's.
        assert {w.app_version for w in scheduled} == {"newer"}


async def test_long_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler_decorator.py::test_long_workflow (an hourly schedule
    does not keep the executor from shutting down)"""

    @dbos.scheduled("0 * * * *")
    @dbos.workflow()
    async def hourly(scheduled: datetime, actual: datetime) -> None:
        return None

    async with dbos.launched():
        await trio.sleep(1)
    assert not dbos.is_launched
