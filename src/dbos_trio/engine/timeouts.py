"""The timeout sweep: workflows past their deadline become CANCELLED.

One executor per application sweeps at a time (the backend takes a transaction-scoped
advisory lock), every second of Trio time with +-10 % jitter. A workflow cancelled this
way that runs in this process has its Trio scope cancelled too, so it stops promptly;
elsewhere it stops at its next checkpoint. A workflow's own deadline also cancels its
scope directly where it runs (engine/workflow.py), so the sweep is the backstop for
workflows whose executor is gone or that are still queued.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

import trio

from .._errors import SystemDatabaseError
from ..sysdb.wakeups import outcome_key

if TYPE_CHECKING:
    from .._executor import Executor

logger = logging.getLogger("dbos_trio.timeouts")

SWEEP_INTERVAL_SECONDS = 1.0


def stop_local(executor: Executor, workflow_ids: list[str]) -> None:
    """Cancel the Trio scopes of these workflows if they run here, and wake their waiters."""
    for workflow_id in workflow_ids:
        execution = executor.local.get(workflow_id)
        if execution is not None:
            execution.cancel_requested = True
            execution.scope.cancel()
        executor.wakeups.wake(outcome_key(workflow_id))


async def sweep(
    executor: Executor,
    *,
    interval: float = SWEEP_INTERVAL_SECONDS,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    task_status.started()
    while True:
        try:
            expired = await executor.sysdb.sweep_timeouts(
                executor.app_name, executor.clock.now_ms()
            )
        except SystemDatabaseError as error:
            logger.warning("timeout sweep failed: %s", error)
        else:
            if expired:
                logger.info("cancelled %d workflows past their deadline", len(expired))
                stop_local(executor, expired)
        await trio.sleep(interval * random.uniform(0.9, 1.1))
