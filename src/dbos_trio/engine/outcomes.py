"""Waiting for a workflow's outcome, and turning a stored outcome into a return or a raise.

Workflow completion has no NOTIFY channel in any SDK. An outcome recorded by this process
wakes its waiters at once (through the waiter registry, no polling); one recorded
elsewhere is found by re-reading the row every ``outcome_poll_interval``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import (
    DBOSAwaitedWorkflowCancelledError,
    DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded,
    DBOSNonExistentWorkflowError,
)
from ..core.statuses import (
    CANCELLED,
    ERROR,
    MAX_RECOVERY_ATTEMPTS_EXCEEDED,
    SUCCESS,
    TERMINAL_STATUSES,
)
from ..sysdb.records import Outcome
from ..sysdb.wakeups import outcome_key

if TYPE_CHECKING:
    from .executor import LocalExecution, Runtime

# While the awaited workflow runs in this process its end wakes us; the database is then
# only re-read as a safety net.
LOCAL_RECHECK_SECONDS = 60.0


def raise_or_return(executor: Runtime, workflow_id: str, outcome: Outcome) -> Any:
    """The stored result of a terminal workflow, or raise what its waiters should see."""
    if outcome.status == SUCCESS:
        return executor.codec.decode(outcome.output, outcome.serialization)
    if outcome.status == ERROR:
        if outcome.error is None:
            raise RuntimeError(f"workflow {workflow_id} is ERROR but has no stored error")
        raise executor.codec.decode_error(outcome.error, outcome.serialization)
    if outcome.status == CANCELLED:
        raise DBOSAwaitedWorkflowCancelledError(workflow_id)
    if outcome.status == MAX_RECOVERY_ATTEMPTS_EXCEEDED:
        raise DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded(workflow_id)
    raise RuntimeError(f"workflow {workflow_id} is not finished ({outcome.status})")


async def wait_for_outcome(
    executor: Runtime,
    workflow_id: str,
    *,
    exclude_local: LocalExecution | None = None,
    poll_interval: float | None = None,
) -> Outcome:
    """Wait until ``workflow_id`` is terminal and return its outcome.

    Raises :class:`DBOSNonExistentWorkflowError` if there is no such workflow.
    """
    interval = executor.outcome_poll_interval if poll_interval is None else poll_interval
    with executor.wakeups.subscribe(outcome_key(workflow_id)) as subscription:
        while True:
            outcome = await executor.sysdb.get_outcome(workflow_id)
            if outcome is None:
                raise DBOSNonExistentWorkflowError("awaited", workflow_id)
            if outcome.status in TERMINAL_STATUSES:
                return outcome
            running_here = executor.local.get(workflow_id)
            local = running_here is not None and running_here is not exclude_local
            await subscription.wait(LOCAL_RECHECK_SECONDS if local else interval)
