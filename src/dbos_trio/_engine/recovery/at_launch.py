"""Crash recovery: one write at launch, before ``launched()`` returns.

Recovery is a re-enqueue, not a loop of executions: this executor's abandoned PENDING
rows (same executor id and application version, this application's or unclaimed) go back
to ENQUEUED on their own queue, or on the internal queue if they had none. Dequeue
workers then run them like any queued work — the original queue's limits apply again,
the claim counts the attempt, and the dead-letter rule applies.

Doing it before launch returns matters: a workflow the application starts the instant
launch returns is PENDING under the same executor id, and must not be swept up as
abandoned. Repeating it is harmless, because a claim re-stamps the executor id.

A recovered row naming a workflow this process did not register is left ENQUEUED for an
executor that has it (claims only take rows whose workflow is registered), with one
warning per workflow name at launch rather than an error on every poll.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from dbos_trio._core.statuses import ENQUEUED
from dbos_trio._engine.recovery import versions
from dbos_trio._sysdb.records import WorkflowFilters
from dbos_trio.errors import SystemDatabaseError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio.recovery")

# How many workflow ids one warning about an unregistered workflow lists.
LISTED_IDS = 5


async def reenqueue_abandoned(executor: Executor) -> int:
    count = await executor.sysdb.reenqueue_abandoned(
        executor.executor_id, executor.app_version, executor.app_name, executor.clock.now_ms()
    )
    if count:
        logger.info(
            "re-enqueued %d workflows of executor %s for recovery", count, executor.executor_id
        )
        await _warn_unregistered(executor)
    return count


async def _warn_unregistered(executor: Executor) -> None:
    """Warn once per workflow name that waits under this executor but is not registered."""
    try:
        rows = await executor.sysdb.list_workflows(
            WorkflowFilters(
                statuses=(ENQUEUED,),
                executor_ids=(executor.executor_id,),
                app_versions=(executor.app_version,),
                scope_application=executor.app_name,
                load_input=False,
                load_output=False,
            )
        )
    except SystemDatabaseError as error:
        logger.warning("cannot check the recovered workflows' names: %s", error)
        return
    registered = set(executor.workflow_names)
    unknown: dict[str, list[str]] = {}
    for row in rows:
        if row.name is not None and row.name not in registered:
            unknown.setdefault(row.name, []).append(row.workflow_id)
    versions.note_warned_names(executor, unknown)  # the census does not repeat these
    for name, workflow_ids in sorted(unknown.items()):
        listed = ", ".join(workflow_ids[:LISTED_IDS])
        more = (
            f" and {len(workflow_ids) - LISTED_IDS} more" if len(workflow_ids) > LISTED_IDS else ""
        )
        logger.warning(
            "%d recovered workflow(s) (%s%s) name %r, which is not registered in this process: "
            "they stay ENQUEUED until an executor that registers it dequeues them",
            len(workflow_ids),
            listed,
            more,
            name,
        )
