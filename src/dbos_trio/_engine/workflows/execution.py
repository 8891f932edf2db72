"""Running one execution of a workflow body, and carrying out how it ended.

Invariants, and why:

* Only the body's own return or exception becomes the outcome (SUCCESS/ERROR). Trio
  cancellation (shutdown), lost ownership and system-database failures are *control*: the
  row stays PENDING (or as its new owner left it) and nothing is recorded. The decision is
  one pure table (:mod:`dbos_trio._core.ending`); this module gathers the facts and acts.
* The outcome write succeeds only while the row is PENDING and ours; a loser adopts
  whatever the winner stored, so every caller of one id sees one outcome.
* A workflow's own deadline cancels its Trio scope in-process, so it stops promptly; so
  does ``cancel_workflow`` in this process. Either way the row ends CANCELLED and callers
  see :class:`DBOSAwaitedWorkflowCancelledError`.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

import trio

from dbos_trio._core.ending import Decision, Ending, decide, find_in, is_process_stop
from dbos_trio._core.statuses import ERROR, SUCCESS
from dbos_trio._engine.admin.management import cancel_workflows
from dbos_trio._engine.admin.timeouts import cancel_expired
from dbos_trio._engine.context import WorkflowContext, current_step, current_workflow
from dbos_trio._engine.observability.failures import WorkflowFailure, failed
from dbos_trio._engine.observability.hooks import carrier_of
from dbos_trio._engine.workflows.checkpoint import encode_error
from dbos_trio._engine.workflows.options import options_cleared
from dbos_trio._engine.workflows.outcomes import raise_or_return, wait_for_outcome
from dbos_trio._engine.workflows.start import ExecutionPlan, workflow_format
from dbos_trio._serialization import PORTABLE_JSON
from dbos_trio._sysdb.errors import DatabaseClosed, is_control
from dbos_trio._sysdb.records import Outcome
from dbos_trio.errors import (
    DBOSArgumentTypeError,
    DBOSPayloadError,
    DBOSValueTooLargeError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
)

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, LocalExecution

logger = logging.getLogger("dbos_trio.workflow")


async def execute(executor: Executor, plan: ExecutionPlan, execution: LocalExecution) -> Any:
    """Run one execution of a workflow body and record how it ended.

    Returns the body's result or raises its exception. Control (shutdown cancellation,
    system-database failure) propagates without recording anything.
    """
    try:
        if executor.tracing is None and executor.metrics is None:
            return await _execute(executor, plan, execution)
        return await _observed(executor, plan, execution)
    finally:
        executor.end_local(execution)


async def _observed(executor: Executor, plan: ExecutionPlan, execution: LocalExecution) -> Any:
    """:func:`_execute` in its workflow span, counted (only while tracing or metrics are
    on). A row dequeued or recovered here brings the carrier persisted with it."""
    name = plan.registered.name
    metrics = executor.metrics
    if metrics is not None:
        metrics.workflow_started(name)
    tracing = executor.tracing
    try:
        if tracing is None:
            result = await _execute(executor, plan, execution)
        else:
            carrier = plan.carrier
            if carrier is None and plan.replaying:
                carrier = carrier_of(await executor.sysdb.workflow_attributes(plan.workflow_id))
            with tracing.workflow_span(name, plan.workflow_id, plan.queue_name, carrier):
                result = await _execute(executor, plan, execution)
    finally:
        if metrics is not None and execution.outcome is not None:
            metrics.workflow_ended(name, execution.outcome.status)
    return result


async def run_detached(executor: Executor, plan: ExecutionPlan, execution: LocalExecution) -> None:
    """Run an execution as a task of the executor's nursery; the handle reports the outcome."""
    try:
        await execute(executor, plan, execution)
    except Exception as error:
        if is_control(error):
            # The row stays PENDING under this executor; the sweep runs it again.
            level = logging.DEBUG if isinstance(error, DatabaseClosed) else logging.WARNING
            logger.log(level, "workflow %s stopped (it stays PENDING): %s", plan.workflow_id, error)
        # Otherwise the outcome is recorded and reaches callers through handles.
    except (DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError):
        pass
    except trio.Cancelled:
        raise
    except BaseException as error:
        # Ctrl-C or sys.exit() in a workflow stops the process, through the executor's
        # nursery and out of launched(); so does a shutdown's cancellation. Anything else
        # was recorded as the workflow's error and is not raised here.
        if find_in(error, trio.Cancelled) is not None or is_process_stop(error):
            raise
        logger.exception("workflow %s stopped with %r", plan.workflow_id, error)


def _context(executor: Executor, plan: ExecutionPlan, recorded: Any) -> WorkflowContext:
    return WorkflowContext(
        executor=executor,
        workflow_id=plan.workflow_id,
        owner_xid=plan.owner_xid,
        # Events, messages and streams: portable if the row is, else the registered
        # format, as dbos 3.4 does (the outcome keeps the row's format, plan.serialization).
        serialization=PORTABLE_JSON
        if plan.serialization == PORTABLE_JSON
        else workflow_format(executor, plan.registered),
        deadline_epoch_ms=plan.deadline_epoch_ms,
        recorded=recorded,
        body_task=trio.lowlevel.current_task(),
    )


async def _execute(executor: Executor, plan: ExecutionPlan, execution: LocalExecution) -> Any:
    recorded = plan.recorded
    if recorded is None and plan.replaying:
        recorded = await executor.sysdb.load_steps(plan.workflow_id)
    ctx = _context(executor, plan, recorded)
    scope = execution.scope
    if plan.deadline_epoch_ms is not None:
        scope.deadline = executor.clock.trio_time_at(plan.deadline_epoch_ms / 1000)
    returned: Any = None
    raised: Exception | None = None
    escaped: BaseException | None = None
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
        escaped = control
    decision = decide(
        escaped=escaped,
        effectively_cancelled=trio.current_effective_deadline() == -math.inf,
        scope_caught_cancel=scope.cancelled_caught,
        scope_cancel_called=scope.cancel_called,
        cancel_requested=execution.cancel_requested,
        control_failure=ctx.control_failure,
        raised=raised,
        raised_is_control=raised is not None and is_control(raised),
    )
    if (
        ctx.finishers
        and decision.ending in (Ending.RECORD_SUCCESS, Ending.RECORD_ERROR)
        and executor.replay is None  # a replay sandbox touches no datasource
    ):
        await ctx.finish()  # before the outcome: a datasource drops its checkpoints
    return await _carry_out(executor, plan, execution, decision, returned, raised, escaped)


async def _carry_out(
    executor: Executor,
    plan: ExecutionPlan,
    execution: LocalExecution,
    decision: Decision,
    returned: Any,
    raised: Exception | None,
    escaped: BaseException | None,
) -> Any:
    if decision.cancel_first:
        if escaped is not None:
            # Still inside a cancelled enclosing scope (a parent with the same deadline):
            # the write is shielded, else the row would stay PENDING until the next sweep.
            await cancel_expired(executor, plan.workflow_id)
        else:
            logger.info("workflow %s reached its deadline: cancelling it", plan.workflow_id)
            await cancel_workflows(executor, [plan.workflow_id])
    if decision.ending is Ending.PROPAGATE:
        assert decision.control is not None
        raise decision.control
    if decision.ending is Ending.ADOPT:
        return await _adopt(executor, plan, execution)
    if decision.error is not None:
        if executor.replay is None:  # a replay sandbox reports its own verdict
            logger.warning("workflow %s: %s", plan.workflow_id, decision.error)
        raised = decision.error
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
            # A large output goes to the payload store from a worker thread (settle), before
            # the outcome that references it is written.
            output = await codec.settle(
                codec.encode(
                    returned,
                    plan.serialization,
                    f"the output of workflow {plan.workflow_id} ({plan.registered.name})",
                    defer=True,
                )
            )
        except DBOSValueTooLargeError as too_large:
            raised = too_large  # recorded as the workflow's error: it names the limit
        except DBOSPayloadError as unstored:
            raised = unstored  # the store refused it: recorded, naming the hash and store
        except Exception as unserializable:
            raised = DBOSArgumentTypeError(  # a TypeError, as dbos 3.4's serializer raises
                f"cannot serialize the result of workflow {plan.workflow_id} as "
                f"{plan.serialization}: {unserializable}"
            )
    if raised is not None:
        status = ERROR
        error = encode_error(codec, raised, plan.serialization)
    execution.recording_outcome = True
    if execution.release_slot is not None:
        execution.release_slot()  # the body is done: a new one may start meanwhile
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
        status=status,
        output=output,
        error=error,
        serialization=plan.serialization,
        name=plan.registered.name,
    )
    if raised is not None:
        failed(
            executor,
            WorkflowFailure(
                workflow_id=plan.workflow_id,
                workflow_name=plan.registered.name,
                status=ERROR,
                error_type=type(raised).__qualname__,
                message=str(raised),
                queue_name=plan.queue_name,
            ),
            executor.registry.failure_hooks,
        )
        execution.raised = raised
        raise raised
    execution.returned = returned
    return returned


async def _adopt(executor: Executor, plan: ExecutionPlan, execution: LocalExecution) -> Any:
    """This execution lost its workflow: let go of it at once, then (if a caller awaits this
    very execution) wait for the owner's outcome and return it.

    Letting go first matters in a fleet: an execution that kept its place while waiting
    would keep its queue slot (every slot of every executor can end up holding such a
    waiter after a shared outage, and then nothing runs) and would be found "lost" again by
    every pass of the cancel watcher. A detached execution (a dequeued row) returns at once;
    its handles read the outcome from the row.
    """
    executor.end_local(execution)
    if execution.detached:
        return None
    outcome = await wait_for_outcome(executor, plan.workflow_id)
    execution.outcome = outcome
    try:
        execution.returned = raise_or_return(executor, plan.workflow_id, outcome)
    except BaseException as error:
        execution.raised = error
        raise
    return execution.returned
