"""Pausing and unpausing workflows and queues, durably, for every executor.

Invariants, and why:

* A pause is database state, nothing else, so it holds across restarts, redeploys and
  executors. A paused workflow's row is ``PAUSED``: no executor of any SDK recovers it
  (they recover PENDING rows) or claims it (they claim ENQUEUED ones). A paused queue's
  row stores a global concurrency of 0 or below (its old limit negated): no SDK claims
  from it, and registering the queue again at a launch keeps it paused.
* A running workflow finishes the step it is in, records it, and stops before its next
  one: in this process at once (:meth:`~dbos_trio._engine.state.Runtime.pause_local`),
  in another dbos_trio process when its cancel watcher looks (woken by the NOTIFY the
  pause sends). Its queue slot is freed; its waiters keep waiting.
* Unpausing puts the workflow back on its own queue (or the internal queue), so it runs
  on from its first step not recorded; a queue claims again at its workers' next poll.
* Operations on what cannot be paused say why and change nothing: a finished workflow
  (:class:`~dbos_trio.DBOSException`), a missing one
  (:class:`~dbos_trio.DBOSNonExistentWorkflowError`), a queue with no row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dbos_trio._core.statuses import PAUSED, TERMINAL_STATUSES
from dbos_trio._sysdb.records import INTERNAL_QUEUE
from dbos_trio._sysdb.wakeups import queue_key
from dbos_trio.errors import DBOSException, DBOSNonExistentWorkflowError

if TYPE_CHECKING:
    from dbos_trio._core.admission import QueueConfig
    from dbos_trio._engine.state import Runtime


async def pause_workflow(runtime: Runtime, workflow_id: str) -> bool:
    """Pause one unfinished workflow; whether this call paused it (False: it was paused
    already). A finished one raises :class:`~dbos_trio.DBOSException` and a missing one
    :class:`~dbos_trio.DBOSNonExistentWorkflowError`, with nothing changed."""
    changed = await runtime.sysdb.pause_workflows([workflow_id], runtime.clock.now_ms())
    # Asked here whatever the write found: a retried write whose first reply was lost
    # changes nothing the second time, yet the workflow is paused.
    runtime.pause_local([workflow_id])
    if changed:
        return True
    status = await _status(runtime, workflow_id)
    if status == PAUSED:
        return False
    raise DBOSException(_not_pausable(workflow_id, status))


async def unpause_workflow(runtime: Runtime, workflow_id: str) -> bool:
    """Let a paused workflow run again from its first step not recorded; whether this call
    unpaused it (False: it is not paused, and nothing changed, unless it is finished or
    missing, which raise as :func:`pause_workflow` does)."""
    changed = await runtime.sysdb.unpause_workflows([workflow_id], runtime.clock.now_ms())
    if changed:
        return True
    status = await _status(runtime, workflow_id)
    if status in TERMINAL_STATUSES:
        raise DBOSException(
            f"workflow {workflow_id} is {status}: it has finished, so there is nothing to unpause"
        )
    return False


async def _status(runtime: Runtime, workflow_id: str) -> str:
    row = await runtime.sysdb.get_workflow(workflow_id)
    if row is None:
        raise DBOSNonExistentWorkflowError("target", workflow_id)
    return row.status


def _not_pausable(workflow_id: str, status: str) -> str:
    if status in TERMINAL_STATUSES:
        return (
            f"workflow {workflow_id} is {status}: it has finished, so there is nothing to "
            "pause (nothing was changed)"
        )
    return f"workflow {workflow_id} is {status}: it cannot be paused (nothing was changed)"


async def pause_queue(runtime: Runtime, name: str) -> bool:
    """Stop claims from queue ``name`` (running work goes on); whether this call paused it
    (False: it was paused already). No such queue raises :class:`~dbos_trio.DBOSException`."""
    changed = await runtime.sysdb.pause_queue(_queue_name(name), runtime.clock.now_ms())
    if not changed:
        await _queue(runtime, name)
    return changed


async def unpause_queue(runtime: Runtime, name: str) -> bool:
    """Claim from queue ``name`` again, with the global concurrency it had; whether this
    call unpaused it (False: it was not paused). No such queue raises."""
    changed = await runtime.sysdb.unpause_queue(_queue_name(name), runtime.clock.now_ms())
    if changed:
        runtime.wakeups.wake(queue_key(name))
    else:
        await _queue(runtime, name)
    return changed


def _queue_name(name: str) -> str:
    if name == INTERNAL_QUEUE:
        raise DBOSException(
            f"{INTERNAL_QUEUE} cannot be paused: it carries recovery, resume and fork; "
            "pause the workflows on it instead"
        )
    return name


async def _queue(runtime: Runtime, name: str) -> QueueConfig:
    config = await runtime.sysdb.get_queue(name)
    if config is None:
        raise DBOSException(
            f"there is no queue {name!r} in the queues table (a queue is stored when an "
            "application registers it)"
        )
    return config
