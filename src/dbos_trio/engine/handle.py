"""Handles on workflows: an id, its status, and its result when it has one.

A result produced by this process is delivered through the execution's ``trio.Event``
(no polling); a result produced elsewhere is polled every ``outcome_poll_interval``.
Inside a workflow body, ``get_result`` is itself checkpointed (``DBOS.getResult``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._context import workflow_outside_steps
from .._errors import DBOSNonExistentWorkflowError
from .._status import WorkflowStatus, workflow_status
from .outcomes import raise_or_return, wait_for_outcome
from .workflow import get_result_in_workflow

if TYPE_CHECKING:
    from .._executor import Executor, LocalExecution

R = TypeVar("R")


class WorkflowHandle(Generic[R]):
    """A started, enqueued or retrieved workflow."""

    def __init__(
        self, executor: Executor, workflow_id: str, local: LocalExecution | None = None
    ) -> None:
        self._executor = executor
        self._workflow_id = workflow_id
        self._local = local

    @property
    def workflow_id(self) -> str:
        return self._workflow_id

    def get_workflow_id(self) -> str:
        return self._workflow_id

    def __repr__(self) -> str:
        return f"WorkflowHandle({self._workflow_id!r})"

    async def get_status(self) -> WorkflowStatus:
        """The workflow's current status row (raises if the workflow no longer exists)."""
        row = await self._executor.sysdb.get_workflow(self._workflow_id)
        if row is None:
            raise DBOSNonExistentWorkflowError("target", self._workflow_id)
        return workflow_status(self._executor.codec, row)

    async def get_result(self) -> R:
        """Wait for the workflow to finish; return its result or raise its error."""
        executor = self._executor
        ctx = workflow_outside_steps()
        if ctx is not None:
            function_id = ctx.reserve_id()
            result: R = await get_result_in_workflow(executor, ctx, function_id, self._workflow_id)
            return result
        local = self._local or executor.local.get(self._workflow_id)
        if local is not None:
            await local.done.wait()
            if local.outcome is not None:
                if local.raised is not None:
                    raise local.raised
                returned: R = local.returned
                return returned
        outcome = await wait_for_outcome(executor, self._workflow_id)
        value: R = raise_or_return(executor, self._workflow_id, outcome)
        return value


def handle_for(executor: Executor, workflow_id: str) -> WorkflowHandle[Any]:
    return WorkflowHandle(executor, workflow_id, executor.local.get(workflow_id))
