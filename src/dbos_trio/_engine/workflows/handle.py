"""Handles on workflows: an id, its status, and its result when it has one.

A result produced by this process is delivered through the execution's ``trio.Event``
(no polling); a result produced elsewhere is polled every ``outcome_poll_interval``.
Inside a workflow body, ``get_result`` is itself checkpointed (``DBOS.getResult``), and
so is :func:`wait_first` (``DBOS.waitFirst``, recording the id of the workflow it returned).
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from dbos_trio._core.statuses import CANCELLED
from dbos_trio._engine.durable.waits import first_finished
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._engine.workflows.children import GET_RESULT, get_result_in_workflow
from dbos_trio._engine.workflows.execution import run_detached
from dbos_trio._engine.workflows.options import StartExtras, start_extras
from dbos_trio._engine.workflows.outcomes import raise_or_return, wait_for_outcome
from dbos_trio._engine.workflows.start import (
    child_workflow_id,
    reject_enqueue_only_options,
    reserve_child,
    start,
)
from dbos_trio._engine.workflows.status import WorkflowStatus, workflow_status
from dbos_trio._registry import RegisteredWorkflow
from dbos_trio.errors import DBOSException, DBOSNonExistentWorkflowError, DBOSNotLaunchedError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, LocalExecution, Runtime

R = TypeVar("R")

WAIT_FIRST = "DBOS.waitFirst"


class StoredWorkflowHandle(Generic[R]):
    """A workflow known by its id: its status, and its result read from the database."""

    def __init__(self, runtime: Runtime, workflow_id: str) -> None:
        self._runtime = runtime
        self._workflow_id = workflow_id

    @property
    def workflow_id(self) -> str:
        """The id of the workflow this handle refers to."""
        return self._workflow_id

    def get_workflow_id(self) -> str:
        """The id of the workflow this handle refers to (the official SDK's spelling)."""
        return self._workflow_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._workflow_id!r})"

    def _reach(self, operation: str) -> Runtime:
        """The runtime ``operation`` reaches the database through (the one given)."""
        return self._runtime

    async def get_status(self) -> WorkflowStatus:
        """The workflow's current status row, read now.

        Raises :class:`~dbos_trio.DBOSNonExistentWorkflowError` if the workflow was
        deleted. One read: cancellation changes nothing; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        runtime = self._reach("get_status")
        row = await runtime.sysdb.get_workflow(self._workflow_id)
        if row is None:
            raise DBOSNonExistentWorkflowError("target", self._workflow_id)
        await runtime.codec.prefetch(row.inputs, row.output)  # store entries, in a thread
        return workflow_status(runtime.codec, row)

    async def get_result(self) -> R:
        """Wait for the workflow to finish (polling); return its result or raise its error."""
        runtime = self._reach("get_result")
        outcome = await wait_for_outcome(runtime, self._workflow_id)
        value: R = raise_or_return(runtime, self._workflow_id, outcome)
        return value


class WorkflowHandle(StoredWorkflowHandle[R]):
    """A started, enqueued or retrieved workflow, seen from a launched executor.

    The handle outlives its executor's launch: after ``launched()`` exits, a call raises
    :class:`~dbos_trio.DBOSNotLaunchedError` saying so, and once the same ``DBOS`` is
    launched again the handle reaches the database through the new executor.
    """

    def __init__(
        self, executor: Executor, workflow_id: str, local: LocalExecution | None = None
    ) -> None:
        super().__init__(executor, workflow_id)
        self._executor = executor
        self._local = local

    def _reach(self, operation: str) -> Executor:
        """The executor this handle came from while it runs, else the same ``DBOS``'s
        current one; :class:`~dbos_trio.DBOSNotLaunchedError` when it has none."""
        executor, slot = self._executor, self._executor.slot
        if slot is None or slot.executor is executor:
            return executor
        if slot.executor is None:
            raise DBOSNotLaunchedError(
                f"WorkflowHandle({self._workflow_id!r}).{operation} (its DBOS has shut "
                "down since the handle was taken; a Client can read the workflow meanwhile)"
            )
        return slot.executor

    async def get_result(self) -> R:
        """Wait for the workflow to finish; return its result or raise its error.

        From a workflow body the wait is a ``DBOS.getResult`` checkpoint; a workflow running
        in this process is awaited through its event, anything else by polling.
        A CANCELLED workflow raises :class:`~dbos_trio.DBOSAwaitedWorkflowCancelledError`
        (cancelled, or its timeout expired), a dead-lettered one
        :class:`~dbos_trio.DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded`, a deleted one
        :class:`~dbos_trio.DBOSNonExistentWorkflowError`. A handle on an execution that was
        cancelled reads the row again, so once the workflow is resumed it gets the resumed
        run's result. Cancelling the wait does not touch the workflow.
        """
        slot = checkpoint.reserve(GET_RESULT)
        if slot is not None:
            result: R = await get_result_in_workflow(slot, self._workflow_id)
            return result
        executor = self._reach("get_result")
        mine = self._local if executor is self._executor else None
        local = mine or executor.local.get(self._workflow_id)
        if local is not None:
            await local.done.wait()
            # A cancelled execution is not the last word: the workflow may have been
            # resumed since, so the row answers (as a handle taken later would).
            if local.outcome is not None and local.outcome.status != CANCELLED:
                if local.raised is not None:
                    raise local.raised
                returned: R = local.returned
                return returned
        outcome = await wait_for_outcome(executor, self._workflow_id)
        value: R = raise_or_return(executor, self._workflow_id, outcome)
        return value


def handle_for(executor: Executor, workflow_id: str) -> WorkflowHandle[Any]:
    return WorkflowHandle(executor, workflow_id, executor.local.get(workflow_id))


def start_workflow(
    executor: Executor,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
    """Start a workflow in the executor's nursery; the coroutine returns once its row exists.

    Inside a workflow body this starts a child: its step id and workflow id are taken
    synchronously at the call, like a step's.
    """
    reject_enqueue_only_options()
    slot, assigned = reserve_child(registered)
    extras = start_extras(assigned)
    return _start(executor, registered, args, kwargs, slot, assigned, extras)


async def _start(
    executor: Executor,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    slot: Slot | None,
    assigned: str | None,
    extras: StartExtras,
) -> WorkflowHandle[Any]:
    workflow_id = await child_workflow_id(slot, assigned)
    started = await start(
        executor, registered, args, kwargs, slot=slot, workflow_id=workflow_id, extras=extras
    )
    if started.plan is None:
        return handle_for(executor, started.workflow_id)
    execution = executor.begin_local(started.workflow_id, started.plan.owner_xid)
    executor.spawn(run_detached, executor, started.plan, execution)
    return WorkflowHandle(executor, started.workflow_id, execution)


def wait_first(
    executor: Executor, handles: Sequence[WorkflowHandle[Any]]
) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
    """Wait until one of ``handles``' workflows is no longer PENDING, ENQUEUED or DELAYED.

    Returns that handle. An empty list or a repeated workflow id raises ``ValueError`` at
    the call. Inside a workflow body it is a checkpoint (``DBOS.waitFirst``, one step id
    taken at the call) recording the returned workflow's id, so a replay returns the same
    handle without waiting. Workflows finishing in this process wake the wait at once;
    others are found by polling every ``outcome_poll_interval``.
    """
    by_id = unique_handles(handles)
    slot = checkpoint.reserve(WAIT_FIRST)
    return _wait_first(executor, by_id, slot)


def unique_handles(handles: Sequence[StoredWorkflowHandle[Any]]) -> dict[str, Any]:
    """Handles by workflow id; ``ValueError`` for none, or for one id given twice."""
    handles = list(handles)
    if not handles:
        raise ValueError("handles must not be empty")
    by_id = {handle.workflow_id: handle for handle in handles}
    if len(by_id) != len(handles):
        raise ValueError("handles must not contain duplicate workflow IDs")
    return by_id


async def _wait_first(
    executor: Executor, by_id: dict[str, WorkflowHandle[Any]], slot: Slot | None
) -> WorkflowHandle[Any]:
    async def finished() -> str:
        return await first_finished(executor, list(by_id))

    winner = await checkpoint.checkpointed(slot, finished, record_errors=False)
    if winner not in by_id:
        assert slot is not None
        raise DBOSException(
            f"workflow {slot.ctx.workflow_id} step {slot.function_id}: wait_first recorded "
            f"{winner!r}, which is not among the handles it was given now"
        )
    return by_id[winner]
