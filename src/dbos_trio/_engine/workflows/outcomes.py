"""Waiting for a workflow's outcome, and turning a stored outcome into a return or a raise.

Workflow completion has no NOTIFY channel in any SDK. An outcome recorded by this process
wakes its waiters at once (through the waiter registry, no polling); one recorded
elsewhere is found by re-reading the row every ``outcome_poll_interval``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from dbos_trio._core.portable_types import UNTYPED, return_hint
from dbos_trio._core.statuses import (
    ALL_STATUSES,
    CANCELLED,
    ERROR,
    MAX_RECOVERY_ATTEMPTS_EXCEEDED,
    PAUSED,
    SUCCESS,
    TERMINAL_STATUSES,
)
from dbos_trio._engine.recovery import versions
from dbos_trio._sysdb.records import Outcome
from dbos_trio._sysdb.wakeups import outcome_key
from dbos_trio.errors import (
    DBOSAwaitedWorkflowCancelledError,
    DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded,
    DBOSCorruptRowError,
    DBOSNonExistentWorkflowError,
)

if TYPE_CHECKING:
    from dbos_trio._engine.state import LocalExecution, Runtime

# While the awaited workflow runs in this process its end wakes us; the database is then
# only re-read as a safety net.
LOCAL_RECHECK_SECONDS = 60.0

logger = logging.getLogger("dbos_trio.workflow")
_warned: set[str] = set()


def _warn_once(workflow_id: str, problem: str) -> None:
    """Warn once per process about a row a waiter may wait on forever."""
    if workflow_id not in _warned:
        _warned.add(workflow_id)
        logger.warning("awaited workflow %s %s", workflow_id, problem)


def _output_hint(executor: Runtime, name: str | None) -> Any:
    """The return annotation of workflow ``name`` if it is registered in this process."""
    registry = getattr(executor, "registry", None)  # a client's runtime has none
    registered = None if registry is None or not name else registry.find(name)
    return UNTYPED if registered is None else return_hint(registered.func)


def raise_or_return(executor: Runtime, workflow_id: str, outcome: Outcome) -> Any:
    """The stored result of a terminal workflow (portable JSON read back as the workflow's
    return annotation), or raise what its waiters should see."""
    if outcome.status == SUCCESS:
        return executor.codec.decode(
            outcome.output,
            outcome.serialization,
            f"the output of workflow {workflow_id}",
            _output_hint(executor, outcome.name),
        )
    if outcome.status == ERROR:
        if outcome.error is None:
            raise DBOSCorruptRowError(workflow_id, "error", "is NULL although the status is ERROR")
        raise executor.codec.decode_error(
            outcome.error, outcome.serialization, f"the error of workflow {workflow_id}"
        )
    if outcome.status == CANCELLED:
        raise DBOSAwaitedWorkflowCancelledError(workflow_id)
    if outcome.status == MAX_RECOVERY_ATTEMPTS_EXCEEDED:
        raise DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded(workflow_id)
    raise DBOSCorruptRowError(workflow_id, "status", f"{outcome.status!r} is not finished")


async def wait_for_outcome(
    executor: Runtime,
    workflow_id: str,
    *,
    exclude_local: LocalExecution | None = None,
    poll_interval: float | None = None,
) -> Outcome:
    """Wait until ``workflow_id`` is terminal and return its outcome (a payload store
    entry its output references read ahead, in a worker thread, for the decode).

    Raises :class:`DBOSNonExistentWorkflowError` if there is no such workflow.
    """
    interval = executor.outcome_poll_interval if poll_interval is None else poll_interval
    looks = 0
    with executor.wakeups.subscribe(outcome_key(workflow_id)) as subscription:
        while True:
            outcome = await executor.sysdb.get_outcome(workflow_id)
            if outcome is None:
                raise DBOSNonExistentWorkflowError("awaited", workflow_id)
            if outcome.status in TERMINAL_STATUSES:
                await executor.codec.prefetch(outcome.output)
                return outcome
            if outcome.status not in ALL_STATUSES:
                raise DBOSCorruptRowError(
                    workflow_id, "status", f"{outcome.status!r} is not a workflow status"
                )
            if outcome.name is None:
                _warn_once(workflow_id, "has no name: no executor can ever run it")
            if outcome.status == PAUSED:
                _warn_once(
                    workflow_id,
                    "is PAUSED: nothing runs it until it is unpaused "
                    f"(dbos-trio workflow unpause {workflow_id})",
                )
            running_here = executor.local.get(workflow_id)
            local = running_here is not None and running_here is not exclude_local
            looks += 1
            if looks == 2 and not local:
                # Once per wait, at the first re-check: a workflow that finishes before it
                # never pays for the diagnosis (two reads).
                await versions.warn_if_stranded(executor, workflow_id)
            await subscription.wait(LOCAL_RECHECK_SECONDS if local else interval)
