"""Automatic adoption never takes the work of a live official executor beside it.

The official SDK does not stamp the rows it runs, so its PENDING row looks silent however
alive it is: dbos_trio's judges adopt only executors whose owner tokens carry the heartbeat
mark. An official executor runs a workflow that waits for a message; a dbos_trio executor
of the same application, adopting after 1.5 s of silence, runs beside it for several
windows; the row stays the official executor's, and the official executor finishes it once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from interop_support import official_executor, rows

from dbos_trio import DBOS, Config
from dbos_trio._client import Client, EnqueueOptions

from support.waiting import wait_until

pytestmark = pytest.mark.interop

APP = "adoption-interop"
OFFICIAL_QUEUE = "official_q"


async def _row(url: str, workflow_id: str) -> tuple[str, str | None, int]:
    found = await rows(
        url,
        "SELECT status, executor_id, recovery_attempts FROM dbos.workflow_status "
        "WHERE workflow_uuid = %s",
        workflow_id,
    )
    status, executor_id, attempts = found[0]
    return str(status), executor_id, int(attempts or 0)


async def test_a_live_official_executors_work_is_never_adopted(
    url: str, official_python: Path
) -> None:
    async with (
        official_executor(official_python, url, APP),
        Client(url, outcome_poll_interval=0.1) as client,
    ):
        handle = await client.enqueue(
            EnqueueOptions(
                workflow_name="official_publisher",
                queue_name=OFFICIAL_QUEUE,
                serialization="portable",
            ),
            "waits",
        )
        workflow_id = handle.workflow_id
        await wait_until(
            lambda: _pending(url, workflow_id), timeout=30, what="the official executor's claim"
        )
        before = await _row(url, workflow_id)
        judge = DBOS(
            Config(
                app_name=APP,
                database_url=url,
                executor_id="trio-judge",
                heartbeat_interval=0.5,
                adopt_dead_executors_after=1.5,
            )
        )
        async with judge.launched():
            await trio.sleep(6)  # four adoption windows of the official row's silence
            during = await _row(url, workflow_id)
        await client.send(workflow_id, {"from": "trio"}, "inbox", serialization="portable")
        with trio.fail_after(30):
            result = await handle.get_result()
    assert during == before  # same status, same executor, no recovery attempt added
    assert before[0] == "PENDING" and before[1] != "trio-judge"
    assert result == {"label": "waits", "message": {"from": "trio"}}


async def _pending(url: str, workflow_id: str) -> bool:
    return (await _row(url, workflow_id))[0] == "PENDING"
