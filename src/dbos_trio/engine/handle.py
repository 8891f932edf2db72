"""Handles on workflows: an id, its status, and its result when it has one.

A result produced by this process is delivered through the execution's ``trio.Event``
(no polling); a result produced elsewhere is polled every ``outcome_poll_interval``.
Inside a workflow body, ``get_result`` is itself checkpointed (``DBOS.getResult``), and
so is :func:`wait_first` (``DBOS.waitFirst``, recording the id of the workflow it returned).
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import trio

from .._context import WorkflowContext, workflow_outside_steps
from .._errors import DBOSException, DBOSNonExistentWorkflowError
from .._registry import RegisteredWorkflow
from .._status import WorkflowStatus, workflow_status
from ..sysdb.records import TERMINAL_STATUSES, WorkflowFilters
from ..sysdb.wakeups import Subscription, outcome_key
from . import checkpoint
from . import workflow as workflows
from .outcomes import raise_or_return, wait_for_outcome
from .workflow import get_result_in_workflow

if TYPE_CHECKING:
    from .._executor import Executor, LocalExecution, Runtime

R = TypeVar("R")

WAIT_FIRST = "DBOS.waitFirst"


class StoredWorkflowHandle(Generic[R]):
    """A workflow known by its id: its status, and its result read from the database."""

    def __init__(self, runtime: Runtime, workflow_id: str) -> None:
        self._runtime = runtime
        self._workflow_id = workflow_id

    @property
    def workflow_id(self) -> str:
        return self._workflow_id

    def get_workflow_id(self) -> str:
        return self._workflow_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._workflow_id!r})"

    async def get_status(self) -> WorkflowStatus:
        """The workflow's current status row (raises if the workflow no longer exists)."""
        row = await self._runtime.sysdb.get_workflow(self._workflow_id)
        if row is None:
            raise DBOSNonExistentWorkflowError("target", self._workflow_id)
        return workflow_status(self._runtime.codec, row)

    async def get_result(self) -> R:
        """Wait for the workflow to finish (polling); return its result or raise its error."""
        outcome = await wait_for_outcome(self._runtime, self._workflow_id)
        value: R = raise_or_return(self._runtime, self._workflow_id, outcome)
        return value


class WorkflowHandle(StoredWorkflowHandle[R]):
    """A started, enqueued or retrieved workflow, seen from a launched executor."""

    def __init__(
        self, executor: Executor, workflow_id: str, local: LocalExecution | None = None
    ) -> None:
        super().__init__(executor, workflow_id)
        self._executor = executor
        self._local = local

    async def get_result(self) -> R:
        """Wait for the workflow to finish; return its result or raise its error.

        From a workflow body the wait is a ``DBOS.getResult`` checkpoint; a workflow running
        in this process is awaited through its event, anything else by polling.
        """
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
        return await super().get_result()


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
    workflows.reject_enqueue_only_options()
    parent = workflows._parent_for_start(registered)
    function_id = parent.reserve_id() if parent is not None else None
    workflow_id = workflows.new_workflow_id(parent, function_id)
    return _start(executor, registered, args, kwargs, parent, function_id, workflow_id)


async def _start(
    executor: Executor,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    parent: WorkflowContext | None,
    function_id: int | None,
    workflow_id: str,
) -> WorkflowHandle[Any]:
    started = await workflows.start(
        executor,
        registered,
        args,
        kwargs,
        parent=parent,
        parent_function_id=function_id,
        workflow_id=workflow_id,
    )
    if started.plan is None:
        return handle_for(executor, started.workflow_id)
    execution = executor.begin_local(started.workflow_id)
    executor.spawn(workflows.run_detached, executor, started.plan, execution)
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
    handles = list(handles)
    if not handles:
        raise ValueError("handles must not be empty")
    by_id = {handle.workflow_id: handle for handle in handles}
    if len(by_id) != len(handles):
        raise ValueError("handles must not contain duplicate workflow IDs")
    ctx = workflow_outside_steps()
    function_id = ctx.reserve_id() if ctx is not None else None
    return _wait_first(executor, by_id, ctx, function_id)


async def _wait_first(
    executor: Executor,
    by_id: dict[str, WorkflowHandle[Any]],
    ctx: WorkflowContext | None,
    function_id: int | None,
) -> WorkflowHandle[Any]:
    if ctx is None or function_id is None:
        return by_id[await _first_finished(executor, list(by_id))]
    recorded = checkpoint.replayed(ctx, function_id, WAIT_FIRST)
    if recorded is not None:
        finished = checkpoint.replay_value(executor, recorded)
        if finished not in by_id:
            raise DBOSException(
                f"workflow {ctx.workflow_id} step {function_id}: wait_first recorded "
                f"{finished!r}, which is not among the handles it was given now"
            )
        return by_id[finished]
    started_at = executor.clock.now_ms()
    finished = await _first_finished(executor, list(by_id))
    await checkpoint.record_value(
        executor, ctx, function_id, WAIT_FIRST, finished, started_at_ms=started_at
    )
    return by_id[finished]


async def _first_finished(executor: Executor, workflow_ids: list[str]) -> str:
    """The id of one of ``workflow_ids`` whose status is terminal, once there is one."""
    filters = WorkflowFilters(
        workflow_ids=tuple(workflow_ids),
        statuses=tuple(sorted(TERMINAL_STATUSES)),
        limit=1,
        load_input=False,
        load_output=False,
    )
    with ExitStack() as stack:
        subscriptions = [
            stack.enter_context(executor.wakeups.subscribe(outcome_key(workflow_id)))
            for workflow_id in workflow_ids
        ]
        while True:
            rows = await executor.sysdb.list_workflows(filters)
            if rows:
                return rows[0].workflow_id
            await _wait_any(subscriptions, executor.outcome_poll_interval)


async def _wait_any(subscriptions: list[Subscription], timeout: float) -> None:
    """Return when any subscription is woken, or after ``timeout`` seconds."""
    if any(subscription.woken for subscription in subscriptions):
        for subscription in subscriptions:
            await subscription.wait(0)  # re-arm
        return
    with trio.move_on_after(timeout):
        async with trio.open_nursery() as nursery:

            async def wake_on(subscription: Subscription) -> None:
                await subscription.wait(float("inf"))
                nursery.cancel_scope.cancel()

            for subscription in subscriptions:
                nursery.start_soon(wake_on, subscription)
