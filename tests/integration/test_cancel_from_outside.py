"""A workflow cancelled by another process while it waits runs no further step body.

The canceller is the ``dbos-trio`` CLI (a real subprocess) or a SQL ``UPDATE`` shaped like
the official SDKs' cancel (on a connection of the test's own); the workflow runs here, in
a durable sleep or a ``recv``. Its second step's body must never run: the step bodies
append to a list, and the row ends CANCELLED with the handle raising
:class:`~dbos_trio.DBOSAwaitedWorkflowCancelledError`. The official client's cancel is in
tests/integration/interop/test_interop_cancel.py.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
import trio

from dbos_trio import DBOS, DBOSAwaitedWorkflowCancelledError, SetWorkflowID

from support.backends import execute, status_row, steps_of
from support.cancel_probe import build_probe
from support.waiting import wait_until


async def cli_cancel(url: str, workflow_id: str) -> None:
    done = await trio.run_process(
        [sys.executable, "-m", "dbos_trio.cli", "workflow", "cancel", workflow_id,
         "--database-url", url],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()


async def sql_cancel(url: str, workflow_id: str) -> None:
    changed = await execute(
        url,
        "UPDATE {t}workflow_status SET status = 'CANCELLED', owner_xid = NULL, "
        "queue_name = NULL, deduplication_id = NULL, started_at_epoch_ms = NULL "
        "WHERE workflow_uuid = %s",
        workflow_id,
    )
    assert changed == 1


CANCELLERS = {"cli": cli_cancel, "sql": sql_cancel}


@pytest.mark.parametrize("canceller", sorted(CANCELLERS))
@pytest.mark.parametrize("wait", ["sleep", "recv"])
async def test_a_workflow_cancelled_from_another_process_runs_no_further_step(
    make_dbos: Callable[..., DBOS], dbos_url: str, canceller: str, wait: str
) -> None:
    dbos = make_dbos()
    ran: list[str] = []
    probe = build_probe(dbos, ran)
    workflow_id = f"probe-{canceller}-{wait}"
    async with dbos.launched():
        with SetWorkflowID(workflow_id):
            handle = await dbos.start_workflow(probe, wait)

        async def waiting() -> bool:
            names = [row[1] for row in await steps_of(dbos_url, workflow_id)]
            return "DBOS.sleep" in names

        await wait_until(waiting, timeout=30, what="the wait to begin")
        await CANCELLERS[canceller](dbos_url, workflow_id)
        with trio.fail_after(30), pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
    assert ran == ["before"]
    assert (await status_row(dbos_url, workflow_id))["status"] == "CANCELLED"
