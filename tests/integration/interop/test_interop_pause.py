"""An official ``dbos`` 3.4 executor never runs a workflow dbos_trio paused, and runs it
once it is unpaused.

The workflow is enqueued on the queue the official executor serves and paused before that
executor starts. A second workflow enqueued behind it afterwards completes, so the
executor has claimed from the queue while the paused row was there; the paused one is
still PAUSED (3.4 claims only ENQUEUED rows, recovers only PENDING ones). Unpaused, it goes
back on its queue and the official executor runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from interop_support import official_executor

from dbos_trio._client import Client, EnqueueOptions

pytestmark = pytest.mark.interop

OFFICIAL_APP = "official-interop"
OFFICIAL_QUEUE = "official_q"


async def test_an_official_executor_runs_no_paused_workflow_and_runs_it_once_unpaused(
    url: str, official_python: Path
) -> None:
    options = EnqueueOptions(workflow_name="official_add", queue_name=OFFICIAL_QUEUE)
    async with Client(url, outcome_poll_interval=0.1) as client:
        held = await client.enqueue(options, 1, 2)
        assert await client.pause_workflow(held.workflow_id) is True
        async with official_executor(official_python, url, OFFICIAL_APP):
            behind = await client.enqueue(options, 5, 5)
            with trio.fail_after(30):
                assert await behind.get_result() == 10
            status = await held.get_status()
            assert status.status == "PAUSED" and status.executor_id is None
            assert await client.unpause_workflow(held.workflow_id) is True
            with trio.fail_after(30):
                assert await held.get_result() == 3
        done = await held.get_status()
        assert done.status == "SUCCESS" and done.application_name == OFFICIAL_APP
