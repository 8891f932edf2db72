"""Operator actions added with issue 17: updating attributes and rewinding a workflow.

Each is one transaction of the system database. A rewind keeps the workflow's id (so
senders and readers keep addressing it), discards its history from a step on, and puts
it back on a queue; the executor serving that queue's worker here is woken at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dbos_trio._sysdb.records import INTERNAL_QUEUE
from dbos_trio._sysdb.wakeups import queue_key

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime


async def update_workflow_attributes(
    runtime: Runtime, workflow_id: str, attributes: str | None, *, merge: bool
) -> bool:
    """Replace (or merge into) the stored attributes; False if there is no such workflow."""
    return await runtime.sysdb.update_workflow_attributes(
        workflow_id, attributes, merge=merge, now_ms=runtime.clock.now_ms()
    )


async def rewind_workflow(
    runtime: Runtime,
    workflow_id: str,
    start_step: int,
    *,
    application_version: str | None = None,
    queue_name: str | None = None,
    queue_partition_key: str | None = None,
) -> None:
    """Discard a terminal workflow's history from ``start_step`` on and re-enqueue it."""
    await runtime.sysdb.rewind_workflow(
        workflow_id,
        start_step,
        application_version=application_version,
        queue_name=queue_name,
        queue_partition_key=queue_partition_key,
        now_ms=runtime.clock.now_ms(),
    )
    runtime.wakeups.wake(queue_key(queue_name or INTERNAL_QUEUE))
