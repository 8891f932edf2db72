"""Calling a workflow directly, and awaiting a workflow's result from a workflow body.

Invariants, and why:

* A direct call runs the workflow in the caller's task and returns its result or raises
  its error. Inside a workflow body it is a child workflow and takes two step ids,
  reserved at the call: the child's start (recorded with the child's row), then its
  result (``DBOS.getResult``), so a replayed parent gets the child's outcome from its own
  checkpoint without waiting.
* A direct child interrupted only because its parent was cancelled (it ran in the
  parent's task) continues on the internal queue, from its last checkpoint, as in dbos
  3.4: the child itself was not cancelled.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import trio

from dbos_trio._clock import real_time_limit
from dbos_trio._core.ending import find_in
from dbos_trio._core.statuses import ERROR, SUCCESS, TERMINAL_STATUSES
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._engine.workflows.execution import execute
from dbos_trio._engine.workflows.options import StartExtras, start_extras
from dbos_trio._engine.workflows.outcomes import raise_or_return, wait_for_outcome
from dbos_trio._engine.workflows.start import (
    ExecutionPlan,
    child_workflow_id,
    reject_enqueue_only_options,
    reserve_child,
    start,
)
from dbos_trio._registry import RegisteredWorkflow
from dbos_trio._sysdb.errors import is_control
from dbos_trio._sysdb.records import INTERNAL_QUEUE, InitResult, Outcome
from dbos_trio._sysdb.wakeups import queue_key
from dbos_trio.errors import SystemDatabaseError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, LocalExecution

logger = logging.getLogger("dbos_trio.workflow")

GET_RESULT = "DBOS.getResult"
# How long a shielded hand-off write may take while its caller is being cancelled.
CLEANUP_SECONDS = 5.0


def call(
    executor: Executor,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Coroutine[Any, Any, Any]:
    """A direct call (see the module docs); the ids are taken now, at the call."""
    reject_enqueue_only_options()
    start_slot, assigned = reserve_child(registered, ids=2)
    extras = start_extras(assigned)
    result_slot = None if start_slot is None else start_slot.following(GET_RESULT)
    return _call(executor, registered, args, kwargs, start_slot, result_slot, assigned, extras)


async def _call(
    executor: Executor,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    start_slot: Slot | None,
    result_slot: Slot | None,
    assigned: str | None,
    extras: StartExtras,
) -> Any:
    workflow_id = await child_workflow_id(start_slot, assigned)
    if result_slot is not None:
        recorded = result_slot.recorded()
        if recorded is not None:
            return await checkpoint.replayed_value(executor, recorded)
    # The getResult checkpoint spans the whole call (the child's run included), as in
    # dbos 3.4: its start is taken before the child's.
    began = executor.clock.now_ms()
    started = await start(
        executor, registered, args, kwargs, slot=start_slot, workflow_id=workflow_id, extras=extras
    )
    if started.plan is None:
        if result_slot is not None:
            return await get_result_in_workflow(
                result_slot, started.workflow_id, started.init, started_at_ms=began
            )
        outcome = await _outcome_from_init(executor, started.workflow_id, started.init)
        return raise_or_return(executor, started.workflow_id, outcome)
    execution = executor.begin_local(started.workflow_id, started.plan.owner_xid)
    try:
        value = await execute(executor, started.plan, execution)
    except BaseException as error:
        if result_slot is not None and _cancelled_around(executor, result_slot, execution, error):
            await _hand_off(executor, started.plan)
        if result_slot is not None and _is_outcome(error):
            await _record_child_result(result_slot, started.workflow_id, execution.outcome, began)
        raise
    if result_slot is not None:
        await _record_child_result(result_slot, started.workflow_id, execution.outcome, began)
    return value


def _cancelled_around(
    executor: Executor, slot: Slot, child: LocalExecution, error: BaseException
) -> bool:
    """Whether a direct child stopped only because its parent was cancelled by request."""
    parent_execution = executor.local.get(slot.ctx.workflow_id)
    return (
        child.outcome is None
        and find_in(error, trio.Cancelled) is not None
        and parent_execution is not None
        and parent_execution.cancel_requested
        and not child.cancel_requested
    )


async def _hand_off(executor: Executor, plan: ExecutionPlan) -> None:
    """Re-enqueue a direct child interrupted by its parent's cancellation, wherever the
    internal queue is served. Shielded: the caller is being cancelled."""
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
    return isinstance(error, Exception) and not is_control(error)


async def _outcome_from_init(
    executor: Executor, workflow_id: str, init: InitResult | None
) -> Outcome:
    if init is not None and init.status in TERMINAL_STATUSES:
        await executor.codec.prefetch(init.output)
        return Outcome(
            status=init.status,
            output=init.output,
            error=init.error,
            serialization=init.serialization,
        )
    return await wait_for_outcome(executor, workflow_id)


async def _record_child_result(
    slot: Slot, child_id: str, outcome: Outcome | None, started_at_ms: int
) -> None:
    """Record the outcome of a child that ran inline; the execution knows it (as written,
    or as adopted), so reading it back costs a round trip only if it does not."""
    if outcome is None:
        outcome = await slot.executor.sysdb.get_outcome(child_id)
        assert outcome is not None
    await _record_outcome_checkpoint(slot, child_id, outcome, started_at_ms)


async def _record_outcome_checkpoint(
    slot: Slot, child_id: str, outcome: Outcome, started_at_ms: int
) -> None:
    """Record a child's outcome as the parent's ``DBOS.getResult`` checkpoint, started
    when the parent began to wait for it."""
    executor = slot.executor
    output, error, fmt = outcome.output, outcome.error, outcome.serialization
    if outcome.status not in (SUCCESS, ERROR):
        fmt = executor.codec.default_format
        try:
            raise_or_return(executor, child_id, outcome)
        except Exception as awaited_error:
            output, error = None, checkpoint.encode_error(executor.codec, awaited_error, fmt)
    await checkpoint.record(
        slot,
        started_at_ms=started_at_ms,
        output=output,
        error=error,
        serialization=fmt,
        child_workflow_id=child_id,
    )


async def get_result_in_workflow(
    slot: Slot,
    workflow_id: str,
    init: InitResult | None = None,
    *,
    started_at_ms: int | None = None,
) -> Any:
    """Await another workflow's outcome from a workflow body, checkpointed as getResult:
    a step from ``started_at_ms`` (default: now, as the wait begins) to the outcome."""
    await slot.placed()
    executor = slot.executor
    recorded = slot.recorded()
    if recorded is not None:
        return await checkpoint.replayed_value(executor, recorded)
    began = executor.clock.now_ms() if started_at_ms is None else started_at_ms
    outcome = await _outcome_from_init(executor, workflow_id, init)
    await _record_outcome_checkpoint(slot, workflow_id, outcome, began)
    return raise_or_return(executor, workflow_id, outcome)
