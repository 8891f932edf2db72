"""Running a workflow from its stored row: after a dequeue claim (new work or recovery).

Invariants, and why:

* The claim counted this dispatch (``recovery_attempts + 1``). A row dispatched more than
  ``max_recovery_attempts + 1`` times is parked as MAX_RECOVERY_ATTEMPTS_EXCEEDED instead of
  run again: a workflow that crashes its process every time must not take every process
  down with it forever.
* Inputs that cannot be decoded make the row ERROR at once, so it does not loop.
* A row whose class instance is missing in this process stays PENDING (logged): another
  process, or a later launch, may have it.
* The execution runs as a task in the executor's nursery, holding a slot of the queue's
  (and partition's) local running count, released once: when its body has ended (before
  its outcome is written, so the worker's next claim overlaps that write:
  ``worker_concurrency`` bounds the bodies running here), or when the task ends, however
  it ends. The queue's worker is woken so a freed slot is used at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dbos_trio._core.portable_types import from_portable, parameter_hints
from dbos_trio._core.statuses import ERROR, MAX_RECOVERY_ATTEMPTS_EXCEEDED
from dbos_trio._engine.observability.failures import WorkflowFailure, failed
from dbos_trio._engine.workflows.execution import run_detached
from dbos_trio._engine.workflows.start import ExecutionPlan
from dbos_trio._registry import DBOSConfiguredInstance, RegisteredWorkflow
from dbos_trio._serialization import PORTABLE_JSON
from dbos_trio._sysdb.records import ClaimedWorkflow
from dbos_trio._sysdb.wakeups import outcome_key, queue_key
from dbos_trio.errors import DBOSException, DBOSWorkflowFunctionNotFoundError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio.dispatch")


def coerce_portable_arguments(
    registered: RegisteredWorkflow, args: tuple[Any, ...], kwargs: dict[str, Any], skip: int
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Read portable arguments back as the workflow's parameters are annotated (datetimes,
    dataclasses, decimals...: :mod:`dbos_trio._core.portable_types`), as dbos 3.4 parses
    datetime/date ones; an argument that does not fit its annotation raises
    :class:`~dbos_trio._core.portable_types.PortableValueError` naming the parameter."""
    shape = parameter_hints(registered.func)
    positional = shape.positional[skip:]
    typed_args = []
    for i, value in enumerate(args):
        name, hint = positional[i] if i < len(positional) else (f"args[{i}]", shape.var_positional)
        typed_args.append(from_portable(hint, value, name))
    typed_kwargs = {
        key: from_portable(shape.named.get(key, shape.var_keyword), value, key)
        for key, value in kwargs.items()
    }
    return tuple(typed_args), typed_kwargs


def _bound_receiver(registered: RegisteredWorkflow, claimed: ClaimedWorkflow) -> tuple[Any, ...]:
    if claimed.config_name:
        instance = DBOSConfiguredInstance.find_instance(
            claimed.class_name or "", claimed.config_name
        )
        if instance is None:
            raise DBOSWorkflowFunctionNotFoundError(
                claimed.workflow_id,
                # dbos 3.4's words first, then which instance is missing and where.
                f"configured class instance '{claimed.class_name}/{claimed.config_name}' is not "
                f"registered: no instance of {claimed.class_name} with config name "
                f"{claimed.config_name!r} exists in this process",
            )
        registered.kind = "instance"
        return (instance,)
    if claimed.class_name:
        registered.kind = "class"
        owner = registered.resolve_owner()
        if owner is None:
            raise DBOSWorkflowFunctionNotFoundError(
                claimed.workflow_id, f"class {claimed.class_name} is not known in this process"
            )
        return (owner,)
    return ()


async def dispatch(executor: Executor, claimed: ClaimedWorkflow, owner_xid: str) -> None:
    """Start the execution of one claimed row (returns once it is started, or parked)."""
    workflow_id = claimed.workflow_id
    registered = executor.registry.find(claimed.name)
    if registered is None:
        logger.warning(
            "workflow %s names %r, which is not registered here: leaving it PENDING",
            workflow_id,
            claimed.name,
        )
        return
    limit = registered.max_recovery_attempts
    if limit is not None and claimed.recovery_attempts > limit + 1:
        parked = await executor.sysdb.dead_letter(
            workflow_id, claimed.recovery_attempts, executor.clock.now_ms()
        )
        if parked:
            if executor.metrics is not None:
                executor.metrics.dead_lettered(claimed.name)
            logger.warning(
                "workflow %s (%s) exceeded %d recovery attempts: parked as "
                "MAX_RECOVERY_ATTEMPTS_EXCEEDED (it crashed or was interrupted each time; "
                "fix the cause, then dbos-trio workflow resume %s)",
                workflow_id,
                claimed.name,
                limit,
                workflow_id,
            )
            executor.wakeups.wake(outcome_key(workflow_id))
            failed(
                executor,
                WorkflowFailure(
                    workflow_id=workflow_id,
                    workflow_name=claimed.name,
                    status=MAX_RECOVERY_ATTEMPTS_EXCEEDED,
                    error_type="",
                    message=f"exceeded {limit} recovery attempts",
                    queue_name=claimed.queue_name,
                ),
                executor.registry.failure_hooks,
            )
        return
    try:
        bound = _bound_receiver(registered, claimed)
    except DBOSWorkflowFunctionNotFoundError as missing:
        logger.warning("%s: leaving it PENDING", missing)
        return
    await executor.codec.prefetch(claimed.inputs)  # a store entry, read in a thread
    try:
        args, kwargs = executor.codec.decode_inputs(claimed.inputs, claimed.serialization)
        if claimed.serialization == PORTABLE_JSON:
            args, kwargs = coerce_portable_arguments(registered, args, kwargs, len(bound))
    except Exception as undecodable:
        error = DBOSException(
            f"cannot decode the inputs of workflow {workflow_id} "
            f"({claimed.serialization}): {undecodable}"
        )
        fmt = claimed.serialization or executor.codec.default_format
        try:
            encoded = executor.codec.encode_error(error, fmt)
        except TypeError:
            fmt = executor.codec.default_format
            encoded = executor.codec.encode_error(error, fmt)
        await executor.sysdb.record_outcome(
            workflow_id,
            owner_xid,
            status=ERROR,
            output=None,
            error=encoded,
            completed_at_ms=executor.clock.now_ms(),
        )
        executor.wakeups.wake(outcome_key(workflow_id))
        logger.warning("%s: recorded as ERROR", error)
        return
    plan = ExecutionPlan(
        registered=registered,
        workflow_id=workflow_id,
        owner_xid=owner_xid,
        serialization=claimed.serialization or executor.codec.default_format,
        deadline_epoch_ms=claimed.deadline_epoch_ms,
        args=bound + args,
        kwargs=kwargs,
        replaying=True,
        recorded=claimed.steps,
        queue_name=claimed.queue_name,
    )
    if claimed.recovery_attempts > 1:
        logger.info(
            "recovering workflow %s (%s): dispatch %d",
            workflow_id,
            claimed.name,
            claimed.recovery_attempts,
        )
    metrics = executor.metrics
    if metrics is not None:
        waited = max(0, executor.clock.now_ms() - claimed.created_at) / 1000
        metrics.dispatched(claimed.queue_name, waited, recovered=claimed.recovery_attempts > 1)
    execution = executor.begin_local(workflow_id, owner_xid)
    execution.detached = True
    executor.running.add(claimed.queue_name, claimed.partition_key)
    execution.release_slot = _slot_release(executor, claimed)
    executor.spawn(_run_holding_slot, executor, plan, execution)


def _slot_release(executor: Executor, claimed: ClaimedWorkflow) -> Callable[[], None]:
    """Give back the claimed row's queue (and partition) slot, once, and wake the queue's
    worker so the slot is used at once."""
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            executor.running.remove(claimed.queue_name, claimed.partition_key)
            executor.wakeups.wake(queue_key(claimed.queue_name))

    return release


async def _run_holding_slot(executor: Executor, plan: ExecutionPlan, execution: Any) -> None:
    try:
        await run_detached(executor, plan, execution)
    finally:
        execution.release_slot()
