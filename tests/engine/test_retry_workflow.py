"""Retry: a failed workflow runs again from its first failed step, with today's code.

The fix loop through ``DBOS`` and ``Client`` alike, on both backends: the first run fails at
its second step; the code is fixed; ``retry_workflow`` forks it from that step, so the first
step's recorded result is replayed (its body does not run again) and the rest runs. The
original keeps its ERROR record. A workflow that did not fail is refused, with what fits.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dbos_trio import (
    DBOS,
    Client,
    DBOSAwaitedWorkflowCancelledError,
    DBOSException,
    SetWorkflowID,
)


def app(make_dbos: Callable[..., DBOS], fixed: list[bool], ran: list[str]) -> tuple[DBOS, object]:
    dbos = make_dbos()

    @dbos.step()
    async def reserve() -> str:
        ran.append("reserve")
        return "reserved"

    @dbos.step()
    async def charge() -> str:
        ran.append("charge")
        if not fixed[0]:
            raise ValueError("declined")
        return "charged"

    @dbos.workflow()
    async def checkout() -> str:
        return f"{await reserve()} {await charge()}"

    return dbos, checkout


async def test_retry_replays_the_steps_before_the_failure_and_reruns_the_rest(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    fixed, ran = [False], []
    dbos, checkout = app(make_dbos, fixed, ran)
    async with dbos.launched():
        with SetWorkflowID("order-1"), pytest.raises(ValueError, match="declined"):
            await checkout()  # type: ignore[operator]
        fixed[0] = True
        ran.clear()
        handle = await dbos.retry_workflow("order-1")
        assert await handle.get_result() == "reserved charged"
        assert ran == ["charge"]  # reserve's record was replayed
        retried = await dbos.get_workflow_status(handle.workflow_id)
        assert retried is not None and retried.forked_from == "order-1"
        original = await dbos.get_workflow_status("order-1")
        assert original is not None and original.status == "ERROR"
        with pytest.raises(DBOSException, match="succeeded"):
            await dbos.retry_workflow(handle.workflow_id)


async def test_a_client_retries_too_and_a_cancelled_workflow_is_pointed_to_resume(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    fixed, ran = [False], []
    dbos, checkout = app(make_dbos, fixed, ran)

    @dbos.workflow()
    async def waits() -> object:
        return await dbos.recv("go", timeout_seconds=600)

    async with dbos.launched():
        with SetWorkflowID("order-2"), pytest.raises(ValueError):
            await checkout()  # type: ignore[operator]
        fixed[0] = True
        async with Client(dbos_url) as client:
            handle = await client.retry_workflow("order-2")
            assert await handle.get_result() == "reserved charged"
            with SetWorkflowID("waiting-1"):
                waiting = await dbos.start_workflow(waits)
            await client.cancel_workflow("waiting-1")
            with pytest.raises(DBOSAwaitedWorkflowCancelledError):
                await waiting.get_result()
            with pytest.raises(DBOSException, match="CANCELLED, not ERROR: resume runs it"):
                await client.retry_workflow("waiting-1")
