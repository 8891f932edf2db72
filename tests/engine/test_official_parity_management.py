"""Workflow management found different from dbos 3.4 by porting its test suite (issue 32).

Each test states the dbos 3.4 behaviour it checks; the scenarios are written anew for
dbos_trio.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    DBOSAwaitedWorkflowCancelledError,
    DBOSException,
    DBOSNotLaunchedError,
    SetWorkflowID,
)

from support.waiting import HANG_GUARD

MakeDBOS = Callable[..., DBOS]


async def test_a_handle_taken_before_a_cancel_returns_the_result_once_resumed(
    make_dbos: MakeDBOS,
) -> None:
    """dbos 3.4's handle on a cancelled execution asks the database again: after
    ``resume_workflow`` ran the workflow to SUCCESS, the handle taken at the start returns
    the result (before the resume it raises, as the row is CANCELLED)."""
    dbos = make_dbos()
    entered, release = trio.Event(), trio.Event()

    @dbos.step()
    async def blocking() -> None:
        entered.set()
        await release.wait()

    @dbos.step()
    async def last() -> str:
        return "done"

    @dbos.workflow()
    async def work() -> str:
        await blocking()
        result: str = await last()
        return result

    async with dbos.launched():
        with trio.fail_after(HANG_GUARD):
            with SetWorkflowID("w"):
                original = await dbos.start_workflow(work)
            await entered.wait()
            await dbos.cancel_workflow("w")
            release.set()
            with pytest.raises(DBOSAwaitedWorkflowCancelledError):
                await original.get_result()

            resumed = await dbos.resume_workflow("w")
            assert await resumed.get_result() == "done"
            assert await original.get_result() == "done"
            assert (await original.get_status()).status == "SUCCESS"


async def test_a_handle_outlives_its_launch_and_works_again_in_the_next_one(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    """dbos 3.4's handles keep answering after the block that took them; here a handle
    whose DBOS has shut down says so (not "connection pool is closed"), and reaches the
    database through the same DBOS's next launch. A client's handle likewise follows its
    client."""
    dbos = make_dbos()

    @dbos.workflow()
    async def work(x: int) -> int:
        return x * 2

    async with dbos.launched():
        with SetWorkflowID("h"):
            handle = await dbos.start_workflow(work, 21)
        assert await handle.get_result() == 42
    with pytest.raises(DBOSNotLaunchedError, match=r"WorkflowHandle\('h'\)\.get_status"):
        await handle.get_status()
    with pytest.raises(DBOSNotLaunchedError, match="shut down since the handle was taken"):
        await handle.get_result()
    async with dbos.launched():
        assert await handle.get_result() == 42
        assert (await handle.get_status()).status == "SUCCESS"

    client = Client(dbos_url)
    async with client:
        by_client = await client.retrieve_workflow("h")
    with pytest.raises(DBOSException, match="client is not open"):
        await by_client.get_result()
    async with client:
        assert await by_client.get_result() == 42
