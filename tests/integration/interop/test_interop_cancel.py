"""A dbos_trio workflow cancelled by the official ``dbos`` 3.4 CLI runs no further step.

The official SDK's cancel writes CANCELLED and clears the owner, with no NOTIFY: the
workflow, waiting here in a durable sleep or a ``recv``, is found by its executor's cancel
watcher, and its second step's body never runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from dbos_trio import DBOS, Config, DBOSAwaitedWorkflowCancelledError, SetWorkflowID

from support.cancel_probe import build_probe
from support.waiting import wait_until


@pytest.mark.parametrize("wait", ["sleep", "recv"])
async def test_a_cancel_by_the_official_cli_stops_the_workflow_before_its_next_step(
    url: str, official_cli: Path, wait: str
) -> None:
    dbos = DBOS(Config(app_name="trio-cancelled", database_url=url, app_version="v1"))
    ran: list[str] = []
    probe = build_probe(dbos, ran)
    workflow_id = f"official-cancel-{wait}"
    async with dbos.launched():
        with SetWorkflowID(workflow_id):
            handle = await dbos.start_workflow(probe, wait)
        await wait_until(lambda: ran == ["before"], timeout=30)
        with trio.fail_after(60):
            done = await trio.run_process(
                [str(official_cli), "workflow", "cancel", workflow_id, "--sys-db-url", url],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        assert done.returncode == 0, done.stderr.decode()
        with trio.fail_after(30), pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
    assert ran == ["before"]
