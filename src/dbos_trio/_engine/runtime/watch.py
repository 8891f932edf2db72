"""Cancellations made elsewhere reach the workflows running here.

Invariant: a workflow running in this process whose row someone else cancelled, finished,
re-owned or deleted — another executor, a Client, the official SDKs, the CLI, a SQL
``UPDATE`` — is stopped within one watch interval: its Trio scope is cancelled, so the
step body running now is cancelled and no later step starts, and the execution adopts
the row's outcome (CANCELLED: its waiters get ``DBOSAwaitedWorkflowCancelledError``)
instead of writing one.

Why a watcher, on top of the fences: every checkpoint write is fenced on the owner token,
so a workflow that writes learns of a cancel at its next write. One that waits writes
nothing — a long step, a plain ``trio.sleep`` between steps — so one read per interval
covers every workflow running here, whoever cancelled them. Cancels written by dbos_trio
also NOTIFY (``dbos_trio_cancel_channel``; SQLite: peers in this process), which wakes the
watcher at once; other writers are found by the poll. A durable sleep, the one wait that
ends without a fenced write, looks at its row when it wakes (:mod:`.sleep`).

A PAUSED row is not lost: the execution keeps its token so a running step still records,
and stops before its next step (:mod:`dbos_trio._engine.workflows.pausing`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from dbos_trio._core.statuses import CANCELLED, PAUSED
from dbos_trio._sysdb.errors import SystemDatabaseError
from dbos_trio._sysdb.wakeups import cancels_key

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio.workflow")

WATCH_INTERVAL_SECONDS = 1.0


async def stop_lost(executor: Executor) -> list[str]:
    """Stop every execution here whose row is no longer PENDING under its token; their ids."""
    owners = {workflow_id: run.owner_xid for workflow_id, run in executor.local.items()}
    if not owners:
        return []
    lost = await executor.sysdb.lost_executions(owners)
    # Only executions still the ones looked at: a new execution of the same id (started
    # meanwhile, with a new token) is not the one that lost its row.
    stale = [
        workflow_id
        for workflow_id in lost
        if (run := executor.local.get(workflow_id)) is not None
        and run.owner_xid == owners[workflow_id]
        # Its own outcome write may have committed before its reply came back: the row
        # is finished by this very execution, which nothing needs to stop.
        and not run.recording_outcome
    ]
    paused = [workflow_id for workflow_id in stale if lost[workflow_id] == PAUSED]
    for workflow_id in executor.pause_local(paused):
        logger.info(
            "workflow %s was paused: its execution here stops before its next step "
            "(resume it with: dbos-trio workflow unpause %s)",
            workflow_id,
            workflow_id,
        )
    stale = [workflow_id for workflow_id in stale if lost[workflow_id] != PAUSED]
    for workflow_id in stale:
        if lost[workflow_id] == CANCELLED:
            logger.info("workflow %s was cancelled: stopping its execution here", workflow_id)
        else:
            # Another executor took it over (adoption after a partition, a manual recover):
            # an operator wants to know, once, that this executor gave it up.
            logger.warning(
                "workflow %s is no longer this executor's (its row is %s): stopping its "
                "execution here; whoever owns it now runs it on from its checkpoints",
                workflow_id,
                "deleted" if lost[workflow_id] is None else lost[workflow_id],
            )
    executor.stop_local(stale)
    return stale


async def watch(
    executor: Executor,
    *,
    interval: float | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run :func:`stop_lost` every ``interval`` seconds (Trio clock; default
    :data:`WATCH_INTERVAL_SECONDS`), and at once when a cancel is announced."""
    every = WATCH_INTERVAL_SECONDS if interval is None else interval
    # One subscription for the task's life: an announcement landing while it looks is
    # remembered for the next wait.
    with executor.wakeups.subscribe(cancels_key()) as announced:
        task_status.started()
        while True:
            await announced.wait(every)
            try:
                await stop_lost(executor)
            except SystemDatabaseError as error:
                # An outage is reported by the retrier; the next look tries again.
                logger.debug("cancel watcher could not look (trying again): %s", error)
