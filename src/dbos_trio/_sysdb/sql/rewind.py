"""Rewinding a finished workflow: same id, history from a step on discarded, re-enqueued.

One transaction, the deletions of dbos 3.4's rewind (reference §3.15): events published
at or after the cut are rolled back to their last earlier value, close markers written at
or after it are removed (other stream values stay), checkpoints, event history and the
messages it consumed from the cut on (and unconsumed ones) are deleted, and so is the
stored outcome; then the row goes back on a queue. Only a terminal workflow is rewound:
an active one has an execution that would race the deletions. The final update is
conditioned on the status read at the start, so a concurrent change aborts the whole
rewind instead of re-enqueuing a row someone else just moved.

A lost reply: if the transaction committed but its reply was lost, the backend runs it
again; that re-run (never a first attempt) finds the row ENQUEUED with the ``updated_at``
this very call stamped (its ``now_ms``) and reports success instead of refusing an
active workflow.
"""

from __future__ import annotations

import json

from dbos_trio._core.statuses import DELAYED, ENQUEUED, PENDING
from dbos_trio._sysdb.records import STREAM_CLOSED
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Transaction
from dbos_trio.errors import DBOSException, DBOSNonExistentWorkflowError

CLOSED_MARKER = json.dumps(STREAM_CLOSED)
_DELETIONS = (
    "rewind_delete_events",
    "rewind_restore_events",
    "rewind_delete_stream_ends",
    "rewind_delete_steps",
    "rewind_delete_history",
    "rewind_delete_messages",
    "rewind_delete_output",
)


class RewindOperations(SQLBackendBase):
    async def rewind_workflow(
        self,
        workflow_id: str,
        start_step: int,
        *,
        application_version: str | None,
        queue_name: str | None,
        queue_partition_key: str | None,
        now_ms: int,
    ) -> None:
        params = {
            "workflow_id": workflow_id,
            "start_step": start_step,
            "closed_marker": CLOSED_MARKER,
            "application_version": application_version,
            "queue_name": queue_name,
            "queue_partition_key": queue_partition_key,
            "now": now_ms,
        }

        attempts = 0

        async def rewind(tx: Transaction) -> None:
            nonlocal attempts
            attempts += 1
            row = await tx.one("rewind_status", params)
            if row is None:
                raise DBOSNonExistentWorkflowError("target", workflow_id)
            status = row[0]
            if attempts > 1 and status == ENQUEUED and row[1] == now_ms:
                return  # our own earlier attempt committed; its reply was lost
            if status in (PENDING, ENQUEUED, DELAYED):
                raise DBOSException(
                    f"Cannot rewind {workflow_id} ({status}): only a workflow in a terminal "
                    "state can be rewound, so cancel it first"
                )
            for name in _DELETIONS:
                await tx.run(name, params)
            if await tx.run("rewind_enqueue", {**params, "status": status}) != 1:
                raise DBOSException(
                    f"Workflow {workflow_id} changed status while being rewound; retry the rewind"
                )

        await self._db.transaction(rewind)
