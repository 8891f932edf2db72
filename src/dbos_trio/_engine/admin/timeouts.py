"""The timeout sweep: workflows past their deadline become CANCELLED.

One executor per application sweeps at a time (the backend takes a transaction-scoped
advisory lock), every second of Trio time with +-10 % jitter. A workflow cancelled this
way that runs in this process has its Trio scope cancelled too, so it stops promptly;
elsewhere it stops at its next checkpoint. A workflow's own deadline also cancels its
scope directly where it runs (engine/workflow.py, through :func:`cancel_expired`), so
the sweep is the backstop for workflows whose executor is gone or that are still queued.

A sweep that fails, for whatever reason, is logged and tried again at the next tick: the
sweep task must never take the executor's nursery down with it.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

import trio

from dbos_trio._clock import real_time_limit
from dbos_trio._engine.admin.management import cancel_workflows
from dbos_trio.errors import SystemDatabaseError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, Runtime

logger = logging.getLogger("dbos_trio.timeouts")

SWEEP_INTERVAL_SECONDS = 1.0
# The most rows one sweep statement cancels (its LIMIT); a full batch is followed at once
# by another sweep.
SWEEP_BATCH = 1000
# Real-time bound on the CANCELLED write made after a workflow's own deadline fired.
EXPIRED_WRITE_LIMIT_SECONDS = 10.0


async def cancel_expired(executor: Runtime, workflow_id: str) -> None:
    """Mark a workflow whose own deadline just fired (in this process) CANCELLED.

    This runs right after the deadline cancelled the workflow's scope, often still inside
    a cancelled enclosing scope: a direct child shares its parent's absolute deadline and
    runs in the parent's task, so both scopes fire at once. The write is therefore shielded
    (bounded in real time): without it the child's row would stay PENDING until the next
    sweep. If it fails anyway, the sweep cancels the row.
    """
    with trio.CancelScope(shield=True), real_time_limit(EXPIRED_WRITE_LIMIT_SECONDS):
        try:
            await cancel_workflows(executor, [workflow_id])
        except SystemDatabaseError as error:
            logger.warning("could not cancel %s after its deadline: %s", workflow_id, error)


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
        except Exception as error:
            logger.warning("timeout sweep failed: %s", error)
            expired = []
        if expired:
            logger.info("cancelled %d workflows past their deadline", len(expired))
            executor.stop_local(expired)
        if len(expired) < SWEEP_BATCH:
            await trio.sleep(interval * random.uniform(0.9, 1.1))
