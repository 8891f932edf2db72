"""Failures make noise: a WARNING per failed workflow, and the application's failure hooks.

A workflow that ends in ERROR (its body raised) or MAX_RECOVERY_ATTEMPTS_EXCEEDED (parked
after too many recoveries) is logged once, at WARNING, with its id, name, error type and
message, by the executor that recorded the outcome, and counted per workflow, status and
error type when metrics are on; then each hook registered with ``@dbos.on_failure`` is
called with a :class:`WorkflowFailure`.

Invariants, and why:

* Hooks run only after the outcome is durable (the write that recorded it returned), in a
  task of the executor's nursery, never in the workflow's own task: nothing a hook does —
  raise, hang, get cancelled by shutdown — reaches the workflow, its callers or its row.
  A hook that raises is logged (with its traceback) and the others still run.
* A hook runs once per outcome this executor recorded: an execution that lost the race to
  record (another executor's outcome won) records nothing and calls nothing, so a fleet
  calls each hook once per failure.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio.failures")


@attrs.frozen(kw_only=True)
class WorkflowFailure:
    """A workflow that ended badly, as a failure hook receives it: its id and registered
    name, the status it ended with (``ERROR`` or ``MAX_RECOVERY_ATTEMPTS_EXCEEDED``), the
    error's type name and message (empty for a parked workflow, which raised nothing), and
    the queue it ran on, if any."""

    workflow_id: str
    workflow_name: str
    status: str
    error_type: str
    message: str
    queue_name: str | None = None


FailureHook = Callable[[WorkflowFailure], Awaitable[None]]


def failed(executor: Executor, failure: WorkflowFailure, hooks: Sequence[FailureHook]) -> None:
    """Log ``failure`` at WARNING and start each hook in the executor's nursery (none of
    it in a replay sandbox: ``dbos-trio check`` reports its own verdicts, and runs no
    hook of the application)."""
    if executor.replay is not None:
        return
    if failure.status == "ERROR":
        logger.warning(
            "workflow %s (%s) failed: %s: %s",
            failure.workflow_id,
            failure.workflow_name,
            failure.error_type,
            failure.message,
        )
    if executor.metrics is not None:
        executor.metrics.workflow_failed(failure.workflow_name, failure.status, failure.error_type)
    for hook in hooks:
        executor.spawn(_run_hook, hook, failure)


async def _run_hook(hook: FailureHook, failure: WorkflowFailure) -> None:
    try:
        await hook(failure)
    except Exception:
        logger.exception(
            "failure hook %s raised on workflow %s (the workflow is not affected)",
            getattr(hook, "__qualname__", hook),
            failure.workflow_id,
        )
