"""The orphan sweep: a live executor runs again any workflow it owns that nothing runs.

Invariant: while an executor lives, every PENDING row under its executor id and version
has a task in this process, or is about to get one within one sweep interval. Normally
every such row does (started here, or claimed by a worker here); the sweep is the safety
net for a task that ended without an outcome — a call that gave up under a configured
retry bound, a bug, anything. It finds those rows by comparing the database with the
executions running here, and hands each back to its queue (or the internal one) with a
write fenced on the owner token it saw, through the same path recovery uses: a row whose
owner changed meanwhile is left alone, and the dequeue workers run the rest from their
last checkpoint.

Rows touched within the last sweep interval are left for the next sweep: a workflow
whose row was just created or claimed may not have its task registered yet.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

import trio

from dbos_trio._sysdb.wakeups import queue_key
from dbos_trio.errors import SystemDatabaseError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio.recovery")

SWEEP_INTERVAL_SECONDS = 5.0


async def rerun_orphans(executor: Executor, *, settle_ms: int) -> list[str]:
    """Hand back to the queues every PENDING row of this executor, untouched for at least
    ``settle_ms``, that no task here runs; the ids handed back."""
    now = executor.clock.now_ms()
    rows = await executor.sysdb.pending_of_executor(
        executor.executor_id, executor.app_version, executor.app_name, now - settle_ms
    )
    handed_back: list[str] = []
    for workflow_id, owner_xid in rows:
        if (
            workflow_id in executor.local
            or workflow_id in executor.starting
            or workflow_id in executor.quarantined
        ):
            continue
        if await executor.sysdb.requeue_workflow(workflow_id, owner_xid, now):
            handed_back.append(workflow_id)
    if handed_back:
        logger.warning(
            "%d workflow(s) of this executor were PENDING with nothing running them (%s): "
            "handed back to their queues to run again",
            len(handed_back),
            ", ".join(handed_back[:5]) + (" ..." if len(handed_back) > 5 else ""),
        )
        for name in executor.queue_set.working:
            executor.wakeups.wake(queue_key(name))
    return handed_back


async def sweep(
    executor: Executor,
    *,
    interval: float = SWEEP_INTERVAL_SECONDS,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run :func:`rerun_orphans` every ``interval`` seconds (Trio clock, +-10 %)."""
    task_status.started()
    while True:
        await trio.sleep(interval * random.uniform(0.9, 1.1))
        try:
            await rerun_orphans(executor, settle_ms=round(interval * 1000))
        except SystemDatabaseError as error:
            logger.warning("orphan sweep failed (trying again next interval): %s", error)
