"""Crash recovery: one write at launch, before ``launched()`` returns.

Recovery is a re-enqueue, not a loop of executions: this executor's abandoned PENDING
rows (same executor id and application version, this application's or unclaimed) go back
to ENQUEUED on their own queue, or on the internal queue if they had none. Dequeue
workers then run them like any queued work — the original queue's limits apply again,
the claim counts the attempt, and the dead-letter rule applies.

Doing it before launch returns matters: a workflow the application starts the instant
launch returns is PENDING under the same executor id, and must not be swept up as
abandoned. Repeating it is harmless, because a claim re-stamps the executor id.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._executor import Executor

logger = logging.getLogger("dbos_trio.recovery")


async def reenqueue_abandoned(executor: Executor) -> int:
    count = await executor.sysdb.reenqueue_abandoned(
        executor.executor_id, executor.app_version, executor.app_name, executor.clock.now_ms()
    )
    if count:
        logger.info(
            "re-enqueued %d workflows of executor %s for recovery", count, executor.executor_id
        )
    return count
