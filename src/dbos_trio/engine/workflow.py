"""Starting a workflow, running its body, and recording how it ended.

Invariants, and why:

* Starting is one idempotent insert (``init_workflow``): a new id runs; an id that exists
  never runs again here — a finished workflow returns its stored outcome, an active one
  is waited on — and repeats never count a recovery attempt.
* Only the body's own return or exception becomes the outcome (SUCCESS/ERROR). Trio
  cancellation (shutdown), lost ownership and system-database failures are *control*: the
  row stays PENDING (or as its new owner left it) and nothing is recorded. The outcome
  write succeeds only while the row is PENDING and ours; a loser adopts whatever the
  winner stored.
* A workflow's own deadline cancels its Trio scope in-process, so it stops promptly; so
  does ``cancel_workflow`` in this process. Either way the row ends CANCELLED and callers
  see :class:`DBOSAwaitedWorkflowCancelledError`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import attrs
import trio

from .._clock import real_time_limit
from .._context import (
    WorkflowContext,
    current_step,
    current_workflow,
    enqueue_options,
    options_cleared,
    take_assigned_id,
    timeout_option,
    workflow_outside_steps,
)
from .._errors import (
    DBOSConflictingWorkflowError,
    DBOSException,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
    SystemDatabaseError,
)
from .._registry import DBOSConfiguredInstance, RegisteredWorkflow, member_kind
from .._serialization import PICKLE, PORTABLE_JSON
from ..sysdb.records import (
    ERROR,
    INTERNAL_QUEUE,
    PENDING,
    SUCCESS,
    TERMINAL_STATUSES,
    InitResult,
    NewWorkflow,
    Outcome,
    ParentStep,
    RecordedStep,
)
from ..sysdb.wakeups import queue_key
from . import checkpoint
from .outcomes import raise_or_return, wait_for_outcome

if TYPE_CHECKING:
    from .._executor import Executor, LocalExecution

logger = logging.getLogger("dbos_trio.workflow")

GET_RESULT = "DBOS.getResult"
# How long a shielded hand-off write may take while its caller is being cancelled.
CLEANUP_SECONDS = 5.0


@attrs.frozen
class CallShape:
    """How a call reached a registered workflow: what to prepend, and what to store."""

    bound: tuple[Any, ...]  # the instance or class to pass first, or nothing
    args: tuple[Any, ...]  # the stored positional arguments
    class_name: str | None
    config_name: str | None


def call_shape(registered: RegisteredWorkflow, args: tuple[Any, ...]) -> CallShape:
    kind = member_kind(registered, args)
    if kind == "instance":
        registered.kind = kind
        instance = args[0]
        assert isinstance(instance, DBOSConfiguredInstance)
        return CallShape((instance,), args[1:], registered.class_name, instance.config_name)
    if kind == "class":
        registered.kind = kind
        return CallShape((args[0],), args[1:], registered.class_name, None)
    return CallShape((), args, None, None)


@attrs.frozen
class ExecutionPlan:
    """Everything needed to run one execution of a workflow body."""

    registered: RegisteredWorkflow
    workflow_id: str
    owner_xid: str
    serialization: str
    deadline_epoch_ms: int | None
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    # True when the row existed before this execution (dequeued, recovered, resumed):
    # checkpoints may exist and are loaded once ...
    replaying: bool
    # ... unless the claim already brought them.
    recorded: dict[int, RecordedStep] | None = None


@attrs.frozen
class Started:
    """The result of starting: the id, and a plan if this call must run the body."""

    workflow_id: str
    plan: ExecutionPlan | None
    init: InitResult | None


def new_workflow_id(parent: WorkflowContext | None, function_id: int | None) -> str:
    assigned = take_assigned_id()
    if assigned is not None:
        return assigned
    if parent is not None and function_id is not None:
        return f"{parent.workflow_id}-{function_id}"
    return str(uuid.uuid4())


def start_timeout(
    executor: Executor, parent: WorkflowContext | None, *, queued: bool
) -> tuple[int | None, int | None]:
    """(timeout_ms, deadline_epoch_ms) for a new workflow.

    An explicit ``SetWorkflowTimeout`` wins (the deadline of a queued workflow is set when it
    is dequeued); otherwise a child inherits its parent's absolute deadline.
    """
    seconds = timeout_option()
    if seconds is not None:
        if seconds == 0:
            return None, None
        timeout_ms = max(1, round(seconds * 1000))
        return timeout_ms, None if queued else executor.clock.now_ms() + timeout_ms
    if parent is not None and parent.deadline_epoch_ms is not None:
        return None, parent.deadline_epoch_ms
    return None, None


def reject_enqueue_only_options() -> None:
    """Refuse ``SetEnqueueOptions`` that only mean something to a queue, on a start that
    is not an enqueue: silently ignoring a deduplication id or a delay would be a lie, and
    a stored deduplication id would collide once recovery gives the row a queue.

    ``app_version`` is allowed: it pins the version that may recover the workflow.
    """
    options = enqueue_options()
    set_options = [
        name
        for name, value in (
            ("deduplication_id", options.deduplication_id),
            ("priority", options.priority),
            ("queue_partition_key", options.queue_partition_key),
            ("delay_seconds", options.delay_seconds),
        )
        if value is not None
    ]
    if set_options:
        raise DBOSException(
            f"Enqueue option(s) {', '.join(set_options)} set on a workflow that is not being "
            "enqueued. These options are only supported when enqueueing a workflow onto a queue."
        )
    if options.duplication_policy == "return-existing":
        raise DBOSException(
            "duplication_policy 'return-existing' requires a queue. It is only supported "
            "when enqueueing a workflow onto a queue."
        )


def workflow_format(
    executor: Executor, registered: RegisteredWorkflow, parent: WorkflowContext | None = None
) -> str:
    """The format a new workflow's row is written in: ``portable_json`` if registered
    ``serialization="portable"``, ``py_pickle`` if ``"native"`` (even when a custom
    serializer is configured); with neither, a child of a portable parent is portable (as
    in dbos 3.4: cross-language work stays readable down the tree), else the configured
    serializer's."""
    if registered.native:
        return PICKLE
    if not registered.portable and parent is not None and parent.serialization == PORTABLE_JSON:
        return PORTABLE_JSON
    return executor.codec.format_for(registered.portable)


def check_same_workflow(
    workflow_id: str, init: InitResult, name: str, class_name: str | None, config_name: str | None
) -> None:
    for what, stored, requested in (
        ("function", init.name, name),
        ("class", init.class_name, class_name),
        ("config", init.config_name, config_name),
    ):
        if (stored or None) != (requested or None):
            raise DBOSConflictingWorkflowError(
                workflow_id,
                f"Workflow already exists with a different {what} name: {stored}, but the "
                f"provided {what} name is: {requested}",
            )


async def start(
    executor: Executor,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    parent: WorkflowContext | None,
    parent_function_id: int | None,
    workflow_id: str | None = None,
) -> Started:
    """Create (or find) the row of a direct start; return a plan if this call runs it.

    ``workflow_id`` is the id the caller resolved at the call (:func:`new_workflow_id`);
    None resolves it here.
    """
    shape = call_shape(registered, args)
    if workflow_id is None:
        workflow_id = new_workflow_id(parent, parent_function_id)
    if parent is not None and parent_function_id is not None:
        recorded = checkpoint.replayed(parent, parent_function_id, registered.name)
        if recorded is not None:
            if recorded.error is not None:
                checkpoint.replay_value(executor, recorded)
            return Started(recorded.child_workflow_id or workflow_id, None, None)
    fmt = workflow_format(executor, registered, parent)
    try:
        inputs = executor.codec.encode_inputs(shape.args, kwargs, fmt)
    except Exception as error:
        raise DBOSException(
            f"cannot serialize the arguments of workflow {registered.name} as {fmt}: {error}"
        ) from error
    timeout_ms, deadline_ms = start_timeout(executor, parent, queued=False)
    token = str(uuid.uuid4())
    now = executor.clock.now_ms()
    new = NewWorkflow(
        workflow_id=workflow_id,
        status=PENDING,
        name=registered.name,
        class_name=shape.class_name,
        config_name=shape.config_name,
        inputs=inputs,
        serialization=fmt,
        creator_xid=token,
        owner_xid=token,
        recovery_attempts=1,
        created_at_ms=now,
        executor_id=executor.executor_id,
        application_version=enqueue_options().app_version or executor.app_version,
        application_id=executor.identity.application_id,
        application_name=executor.app_name,
        timeout_ms=timeout_ms,
        deadline_epoch_ms=deadline_ms,
        parent_workflow_id=parent.workflow_id if parent is not None else None,
    )
    link = None
    if parent is not None and parent_function_id is not None:
        link = ParentStep(
            workflow_id=parent.workflow_id,
            owner_xid=parent.owner_xid,
            function_id=parent_function_id,
            function_name=registered.name,
            started_at_ms=now,
            application_name=executor.app_name,
        )
    try:
        init = await executor.sysdb.init_workflow(new, link)
    except SystemDatabaseError as failure:
        if parent is not None:
            parent.control_failure = failure
        raise
    check_same_workflow(workflow_id, init, registered.name, shape.class_name, shape.config_name)
    if not init.created:
        logger.debug("workflow %s exists (%s): not running it again", workflow_id, init.status)
        return Started(workflow_id, None, init)
    plan = ExecutionPlan(
        registered=registered,
        workflow_id=workflow_id,
        owner_xid=token,
        serialization=fmt,
        deadline_epoch_ms=deadline_ms,
        args=shape.bound + shape.args,
        kwargs=kwargs,
        replaying=False,
    )
    return Started(workflow_id, plan, init)


def call(
    executor: Executor,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Coroutine[Any, Any, Any]:
    """A direct call: run in the caller's task, return the result or raise the error.

    Inside a workflow body this is a child workflow and takes two step ids: the child's
    start, then its result (``DBOS.getResult``). Both ids, and the workflow id
    (``SetWorkflowID`` or ``"{parent}-{start id}"``), are taken synchronously at the call,
    so children started with ``nursery.start_soon`` are numbered in call order.
    """
    reject_enqueue_only_options()
    parent = _parent_for_start(registered)
    start_id = parent.reserve_id() if parent is not None else None
    result_id = parent.reserve_id() if parent is not None else None
    workflow_id = new_workflow_id(parent, start_id)
    return _call(executor, registered, args, kwargs, parent, start_id, result_id, workflow_id)


async def _call(
    executor: Executor,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    parent: WorkflowContext | None,
    start_id: int | None,
    result_id: int | None,
    workflow_id: str,
) -> Any:
    if parent is not None and result_id is not None:
        recorded = checkpoint.replayed(parent, result_id, GET_RESULT)
        if recorded is not None:
            return checkpoint.replay_value(executor, recorded)
    started = await start(
        executor,
        registered,
        args,
        kwargs,
        parent=parent,
        parent_function_id=start_id,
        workflow_id=workflow_id,
    )
    if started.plan is not None:
        execution = executor.begin_local(started.workflow_id)
        try:
            value = await execute(executor, started.plan, execution)
        except BaseException as error:
            if parent is not None and _cancelled_around(executor, parent, execution, error):
                await _hand_off(executor, started.plan)
            if parent is not None and result_id is not None and _is_outcome(error):
                await _record_child_result(
                    executor, parent, result_id, started.workflow_id, execution.outcome
                )
            raise
        if parent is not None and result_id is not None:
            await _record_child_result(
                executor, parent, result_id, started.workflow_id, execution.outcome
            )
        return value
    if parent is not None and result_id is not None:
        return await get_result_in_workflow(
            executor, parent, result_id, started.workflow_id, started.init
        )
    outcome = await _outcome_from_init(executor, started.workflow_id, started.init)
    return raise_or_return(executor, started.workflow_id, outcome)


def _cancelled_around(
    executor: Executor, parent: WorkflowContext, child: LocalExecution, error: BaseException
) -> bool:
    """Whether a direct child stopped only because its parent was cancelled by request."""
    parent_execution = executor.local.get(parent.workflow_id)
    return (
        child.outcome is None
        and _find(error, trio.Cancelled) is not None
        and parent_execution is not None
        and parent_execution.cancel_requested
        and not child.cancel_requested
    )


async def _hand_off(executor: Executor, plan: ExecutionPlan) -> None:
    """Re-enqueue a direct child interrupted by its parent's cancellation.

    The child ran in its parent's task, so cancelling the parent stopped it too; the child
    itself was not cancelled, so it continues (as in dbos 3.4), from its last checkpoint,
    wherever the internal queue is served. Shielded: the caller is being cancelled.
    """
    with trio.CancelScope(shield=True), real_time_limit(CLEANUP_SECONDS):
        try:
            moved = await executor.sysdb.requeue_workflow(
                plan.workflow_id, plan.owner_xid, executor.clock.now_ms()
            )
        except SystemDatabaseError as failure:
            logger.warning("could not hand off child %s: %s", plan.workflow_id, failure)
            return
    if moved:
        logger.info(
            "child %s continues on its own after its parent was cancelled", plan.workflow_id
        )
        executor.wakeups.wake(queue_key(INTERNAL_QUEUE))


def _is_outcome(error: BaseException) -> bool:
    """Whether a direct call's error is the child's recorded outcome (not control)."""
    return isinstance(error, Exception) and not isinstance(error, SystemDatabaseError)


def _parent_for_start(registered: RegisteredWorkflow) -> WorkflowContext | None:
    if current_step.get() is not None:
        raise DBOSException(
            f"cannot start workflow {registered.name} from inside a step: start it from the "
            "workflow body"
        )
    return current_workflow.get()


async def _outcome_from_init(
    executor: Executor, workflow_id: str, init: InitResult | None
) -> Outcome:
    if init is not None and init.status in TERMINAL_STATUSES:
        return Outcome(
            status=init.status,
            output=init.output,
            error=init.error,
            serialization=init.serialization,
        )
    return await wait_for_outcome(executor, workflow_id)


async def _record_child_result(
    executor: Executor,
    parent: WorkflowContext,
    function_id: int,
    child_id: str,
    outcome: Outcome | None,
) -> None:
    """Record the outcome of a child that ran inline; the execution knows it (as written,
    or as adopted), so reading it back costs a round trip only if it does not."""
    if outcome is None:
        outcome = await executor.sysdb.get_outcome(child_id)
        assert outcome is not None
    await _record_outcome_checkpoint(executor, parent, function_id, child_id, outcome)


async def _record_outcome_checkpoint(
    executor: Executor, parent: WorkflowContext, function_id: int, child_id: str, outcome: Outcome
) -> None:
    """Record a child's outcome as the parent's ``DBOS.getResult`` checkpoint."""
    output, error, fmt = outcome.output, outcome.error, outcome.serialization
    if outcome.status not in (SUCCESS, ERROR):
        fmt = executor.codec.default_format
        try:
            raise_or_return(executor, child_id, outcome)
        except Exception as awaited_error:
            output, error = None, checkpoint.encode_error(executor.codec, awaited_error, fmt)
    await checkpoint.record(
        executor,
        parent,
        function_id,
        GET_RESULT,
        started_at_ms=executor.clock.now_ms(),
        output=output,
        error=error,
        serialization=fmt,
        child_workflow_id=child_id,
    )


async def get_result_in_workflow(
    executor: Executor,
    ctx: WorkflowContext,
    function_id: int,
    workflow_id: str,
    init: InitResult | None = None,
) -> Any:
    """Await another workflow's outcome from a workflow body, checkpointed as getResult."""
    recorded = checkpoint.replayed(ctx, function_id, GET_RESULT)
    if recorded is not None:
        return checkpoint.replay_value(executor, recorded)
    outcome = await _outcome_from_init(executor, workflow_id, init)
    await _record_outcome_checkpoint(executor, ctx, function_id, workflow_id, outcome)
    return raise_or_return(executor, workflow_id, outcome)


async def execute(executor: Executor, plan: ExecutionPlan, execution: LocalExecution) -> Any:
    """Run one execution of a workflow body and record how it ended.

    Returns the body's result or raises its exception. Control (shutdown cancellation,
    system-database failure) propagates without recording anything.
    """
    try:
        return await _execute(executor, plan, execution)
    finally:
        executor.end_local(execution)


async def _execute(executor: Executor, plan: ExecutionPlan, execution: LocalExecution) -> Any:
    workflow_id = plan.workflow_id
    recorded = plan.recorded
    if recorded is None and plan.replaying:
        recorded = await executor.sysdb.load_steps(workflow_id)
    ctx = WorkflowContext(
        executor=executor,
        workflow_id=workflow_id,
        owner_xid=plan.owner_xid,
        # Events, messages and streams: portable if the row is, else the registered
        # format, as dbos 3.4 does (the outcome keeps the row's format, plan.serialization).
        serialization=PORTABLE_JSON
        if plan.serialization == PORTABLE_JSON
        else workflow_format(executor, plan.registered),
        deadline_epoch_ms=plan.deadline_epoch_ms,
        recorded=recorded,
    )
    scope = execution.scope
    if plan.deadline_epoch_ms is not None:
        scope.deadline = executor.clock.trio_time_at(plan.deadline_epoch_ms / 1000)
    returned: Any = None
    raised: Exception | None = None
    try:
        with scope:
            workflow_token = current_workflow.set(ctx)
            step_token = current_step.set(None)
            try:
                with options_cleared():
                    returned = await plan.registered.func(*plan.args, **plan.kwargs)
            except Exception as error:
                raised = error
            finally:
                current_step.reset(step_token)
                current_workflow.reset(workflow_token)
    except BaseException as control:
        return await _after_control(executor, plan, execution, control)
    if scope.cancelled_caught:
        return await _after_own_cancellation(executor, plan, execution)
    if ctx.control_failure is not None:
        raise ctx.control_failure
    if raised is not None and isinstance(raised, SystemDatabaseError):
        raise raised
    return await _finish(executor, plan, execution, returned, raised)


async def _finish(
    executor: Executor,
    plan: ExecutionPlan,
    execution: LocalExecution,
    returned: Any,
    raised: Exception | None,
) -> Any:
    codec = executor.codec
    output = error = None
    status = SUCCESS
    if raised is None:
        try:
            output = codec.encode(returned, plan.serialization)
        except Exception as unserializable:
            raised = DBOSException(
                f"cannot serialize the result of workflow {plan.workflow_id} as "
                f"{plan.serialization}: {unserializable}"
            )
    if raised is not None:
        status = ERROR
        error = checkpoint.encode_error(codec, raised, plan.serialization)
    won = await executor.sysdb.record_outcome(
        plan.workflow_id,
        plan.owner_xid,
        status=status,
        output=output,
        error=error,
        completed_at_ms=executor.clock.now_ms(),
    )
    if not won:
        logger.debug("workflow %s: outcome already decided elsewhere; adopting", plan.workflow_id)
        return await _adopt(executor, plan, execution)
    execution.outcome = Outcome(
        status=status, output=output, error=error, serialization=plan.serialization
    )
    if raised is not None:
        execution.raised = raised
        raise raised
    execution.returned = returned
    return returned


async def _adopt(executor: Executor, plan: ExecutionPlan, execution: LocalExecution) -> Any:
    """This execution lost its workflow: wait for the owner's outcome and return it."""
    outcome = await wait_for_outcome(executor, plan.workflow_id, exclude_local=execution)
    execution.outcome = outcome
    try:
        execution.returned = raise_or_return(executor, plan.workflow_id, outcome)
    except BaseException as error:
        execution.raised = error
        raise
    return execution.returned


async def _after_control(
    executor: Executor, plan: ExecutionPlan, execution: LocalExecution, control: BaseException
) -> Any:
    if execution.scope.cancel_called and not execution.cancel_requested:
        # Its deadline fired, but an enclosing scope that fired too (a parent with the same
        # deadline) takes the Cancelled: this row must still end CANCELLED.
        from .timeouts import cancel_expired

        await cancel_expired(executor, plan.workflow_id)
    cancelled = _find(control, DBOSWorkflowCancelledError)
    if cancelled is not None:
        return await _adopt(executor, plan, execution)
    if _find(control, DBOSWorkflowConflictIDError) is not None:
        return await _adopt(executor, plan, execution)
    raise control


async def _after_own_cancellation(
    executor: Executor, plan: ExecutionPlan, execution: LocalExecution
) -> Any:
    """The workflow's own scope was cancelled: by its deadline, or by cancel_workflow here."""
    if not execution.cancel_requested:
        from .management import cancel_workflows

        logger.info("workflow %s reached its deadline: cancelling it", plan.workflow_id)
        await cancel_workflows(executor, [plan.workflow_id])
    return await _adopt(executor, plan, execution)


def _find(error: BaseException, kind: type[BaseException]) -> BaseException | None:
    if isinstance(error, kind):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _find(inner, kind)
            if found is not None:
                return found
    return None


async def run_detached(executor: Executor, plan: ExecutionPlan, execution: LocalExecution) -> None:
    """Run an execution as a task of the executor's nursery; the handle reports the outcome."""
    try:
        await execute(executor, plan, execution)
    except Exception:
        pass  # the outcome (recorded) reaches callers through handles
    except (DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError):
        pass
    except trio.Cancelled:
        raise
    except BaseException as error:
        if _find(error, trio.Cancelled) is not None:
            raise
        logger.exception("workflow %s stopped with %r", plan.workflow_id, error)


def workflow_context_for_call() -> WorkflowContext | None:
    """The running workflow body, if a durable call is being made from one."""
    return workflow_outside_steps()
