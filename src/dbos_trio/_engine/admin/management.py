"""Operator actions on stored workflows: cancel, resume, delete, delay, fork.

Each is one database write plus, for cancel, the in-process part: a workflow cancelled
while it runs in this process has its Trio scope cancelled at once, so a body blocked in
``sleep``, ``recv`` or a long step stops promptly; elsewhere it stops at its next
checkpoint (the cancel cleared its ownership token).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dbos_trio._sysdb.records import INTERNAL_QUEUE
from dbos_trio._sysdb.wakeups import queue_key
from dbos_trio.errors import DBOSNonExistentWorkflowError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime


async def cancel_workflows(
    executor: Runtime, workflow_ids: Sequence[str], *, cancel_children: bool = False
) -> list[str]:
    """Cancel every listed workflow that is not finished; return the ids cancelled."""
    cancelled: list[str] = []
    level = list(workflow_ids)
    while level:
        now = executor.clock.now_ms()
        changed = await executor.sysdb.cancel_workflows(level, now)
        cancelled.extend(changed)
        # Every requested one, not only those this call changed: if an earlier attempt
        # committed and its reply was lost, the retry changes nothing, yet the workflow
        # is cancelled (one that finished meanwhile no longer runs here anyway).
        executor.stop_local(level)
        if not cancel_children:
            break
        level = await executor.sysdb.list_children(level)
    return cancelled


async def descendants(executor: Runtime, workflow_ids: Sequence[str]) -> list[str]:
    """Every workflow below these through ``parent_workflow_id``, breadth first."""
    found: list[str] = []
    seen = set(workflow_ids)
    level = list(workflow_ids)
    while level:
        level = [c for c in await executor.sysdb.list_children(level) if c not in seen]
        seen.update(level)
        found.extend(level)
    return found


async def resume_workflows(
    executor: Runtime, workflow_ids: Sequence[str], *, queue_name: str | None = None
) -> list[str]:
    """Re-enqueue unfinished workflows (attempts reset); a missing id raises."""
    ids = list(workflow_ids)
    existing = await executor.sysdb.existing_workflows(ids)
    for workflow_id in ids:
        if workflow_id not in existing:
            raise DBOSNonExistentWorkflowError("target", workflow_id)
    resumed = await executor.sysdb.resume_workflows(ids, queue_name, executor.clock.now_ms())
    executor.wakeups.wake(queue_key(queue_name or INTERNAL_QUEUE))
    return resumed


async def delete_workflows(
    executor: Runtime, workflow_ids: Sequence[str], *, delete_children: bool = False
) -> None:
    ids = list(workflow_ids)
    if delete_children:
        ids.extend(await descendants(executor, ids))
    await executor.sysdb.delete_workflows(ids)


async def set_workflow_delay(executor: Runtime, workflow_id: str, delay_seconds: float) -> bool:
    now = executor.clock.now_ms()
    return await executor.sysdb.set_workflow_delay(
        workflow_id, now + round(delay_seconds * 1000), now
    )
