"""Graceful drain: on shutdown, stop taking work, let running workflows finish, then stop.

Invariants, and why:

* Draining first stops everything that *starts* workflows here — the dequeue supervisor
  and its per-queue workers, and the orphan sweep — so no row is claimed once the drain
  began (a claim already in flight completes, and what it claimed runs like the rest).
  Everything that *stops* workflows keeps running: the timeout sweep and the cancel
  watcher, so a cancel or a deadline still reaches a draining workflow.
* The wait is bounded on the Trio clock (so it is testable on virtual time). What still
  runs when the time is up is cancelled by the shutdown that follows: those workflows
  stay PENDING, and recovery (here at the next launch, or another executor's) runs them
  again from their last checkpoint.
* Only a block that *leaves* (normally or by raising) drains. A block cancelled from
  outside cancels the workflows of its nursery at the same moment — structured
  concurrency gives them no way out of an enclosing cancelled scope — so they stop at
  once and stay PENDING. That is why the SIGTERM recipe of ``docs/operations.md`` waits
  for the signal inside the block and then leaves it, rather than cancelling it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from dbos_trio._sysdb.wakeups import queue_key

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio")


async def stoppable(
    executor: Executor,
    run: Callable[..., Awaitable[Any]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run ``run(task_status=...)`` inside a cancel scope the drain cancels."""
    scope = trio.CancelScope()
    executor.claimers.append(scope)
    with scope:
        await run(task_status=task_status)


def stop_claiming(executor: Executor) -> None:
    """Stop every task that starts workflows here (see the module docs)."""
    for scope in executor.claimers:
        scope.cancel()
    queues = executor.queue_set
    queues.served = frozenset()
    # A worker leaves once its queue is no longer served: wake each to see it now.
    for name in list(queues.working):
        executor.wakeups.wake(queue_key(name))


async def drain(executor: Executor, seconds: float) -> int:
    """Stop claiming, then wait up to ``seconds`` for the workflows running here to end;
    the number still running when the time was up (0: all finished).

    Shielded, so a drain that follows a cancellation still awaits the cancelled
    workflows' shielded cleanup; never raises.
    """
    stop_claiming(executor)
    with trio.CancelScope(shield=True), trio.move_on_after(seconds):
        while executor.local or executor.starting:
            for execution in list(executor.local.values()):
                await execution.done.wait()
            if executor.starting and not executor.local:
                await trio.sleep(0.01)  # a dispatch in flight: it is about to run
    left = len(executor.local) + len(executor.starting)
    if left:
        logger.warning(
            "drain: %d workflow(s) still running after %s s are interrupted; they stay "
            "PENDING and are recovered",
            left,
            seconds,
        )
    return left
