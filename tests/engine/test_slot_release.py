"""A dequeued workflow gives its queue slot back when its body ends, before its outcome is
written (issue 34), on both backends.

``worker_concurrency`` bounds the bodies running in this process: the next claim may then
overlap the finished one's outcome write (in a drain, the claim and the outcome batch of
the cohort before it run at once instead of one after the other). Observed with a
worker concurrency of 1 and the first workflow's outcome write held back: the second
workflow's body starts while that write waits, no two bodies ever run at once, and both
end recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.lowlevel

from dbos_trio import DBOS, SetWorkflowID

from support.backends import status_row
from support.waiting import HANG_GUARD

MakeDBOS = Callable[..., DBOS]


async def test_the_next_body_starts_while_the_last_outcome_is_written(
    make_dbos: MakeDBOS, dbos_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbos = make_dbos()
    queue = dbos.register_queue("slot_q", worker_concurrency=1)
    running: list[str] = []
    overlap: list[int] = []
    second_started = trio.Event()
    outcome_held = trio.Event()

    @dbos.workflow(name="slot.job")
    async def job(name: str) -> str:
        running.append(name)
        overlap.append(len(running))
        if name == "second":
            second_started.set()
        await trio.lowlevel.checkpoint()
        running.remove(name)
        return name

    async with dbos.launched():
        sysdb: Any = dbos._slot.require("test").sysdb  # the executor's backend
        record_outcome = sysdb.record_outcome

        async def held(workflow_id: str, *args: Any, **kwargs: Any) -> bool:
            if workflow_id == "first-id":
                outcome_held.set()
                with trio.fail_after(HANG_GUARD):
                    await second_started.wait()  # the next body runs meanwhile
            won: bool = await record_outcome(workflow_id, *args, **kwargs)
            return won

        monkeypatch.setattr(sysdb, "record_outcome", held)
        with SetWorkflowID("first-id"):
            first = await queue.enqueue(job, "first")
        with trio.fail_after(HANG_GUARD):
            await outcome_held.wait()
        with SetWorkflowID("second-id"):
            second = await queue.enqueue(job, "second")
        with trio.fail_after(HANG_GUARD):
            assert await first.get_result() == "first"
            assert await second.get_result() == "second"
    assert max(overlap) == 1  # never two bodies at once
    for workflow_id in ("first-id", "second-id"):
        assert (await status_row(dbos_url, workflow_id))["status"] == "SUCCESS"
