"""Operator actions on stored workflows: cancel, resume, delete, delay, fork.

Each is one database write plus, for cancel, the in-process part: a workflow cancelled
while it runs in this process has its Trio scope cancelled at once, so a body blocked in
``sleep``, ``recv`` or a long step stops promptly; elsewhere it stops at its next
checkpoint (the cancel cleared its ownership token).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._executor import Executor


async def cancel_workflows(
    executor: Executor, workflow_ids: Sequence[str], *, cancel_children: bool = False
) -> list[str]:
    """Cancel every listed workflow that is not finished; return the ids cancelled."""
    cancelled: list[str] = []
    level = list(workflow_ids)
    while level:
        now = executor.clock.now_ms()
        changed = await executor.sysdb.cancel_workflows(level, now)
        cancelled.extend(changed)
        for workflow_id in changed:
            execution = executor.local.get(workflow_id)
            if execution is not None:
                execution.cancel_requested = True
                execution.scope.cancel()
        if not cancel_children:
            break
        level = await executor.sysdb.list_children(level)
    return cancelled
