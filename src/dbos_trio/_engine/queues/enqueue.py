"""Enqueueing workflows, and registering queues.

An enqueue writes one ENQUEUED (or DELAYED) row with its inputs and never runs it: a
dequeue worker — in this process or any other serving the queue — claims it. An enqueue
in this process wakes this process's worker for that queue at once, so a local enqueue
does not wait for the next poll.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core.admission import RESERVED_QUEUE_PREFIX, QueueConfig
from dbos_trio._engine.observability.hooks import carrier_attributes
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._engine.workflows.handle import WorkflowHandle, handle_for
from dbos_trio._engine.workflows.options import (
    EnqueueOptions,
    StartExtras,
    enqueue_options,
    start_extras,
)
from dbos_trio._engine.workflows.rows import new_row, placement_for
from dbos_trio._engine.workflows.start import (
    call_shape,
    check_reuse,
    check_same_workflow,
    child_workflow_id,
    encode_inputs,
    parent_step,
    reserve_child,
    start_timeout,
    workflow_format,
    writer_of,
)
from dbos_trio._registry import RegisteredWorkflow
from dbos_trio._sysdb.records import INTERNAL_QUEUE, InitResult, NewWorkflow, ParentStep
from dbos_trio._sysdb.wakeups import queue_key
from dbos_trio.errors import DBOSInvalidArgumentError, DBOSQueueDeduplicatedError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, Runtime


def check_enqueue(queue_name: str, config: QueueConfig | None, options: EnqueueOptions) -> None:
    """Reject what can be known wrong before anything is written."""
    if not isinstance(queue_name, str) or not queue_name:
        raise DBOSInvalidArgumentError(f"queue name must be a non-empty string, not {queue_name!r}")
    if queue_name.startswith(RESERVED_QUEUE_PREFIX) and queue_name != INTERNAL_QUEUE:
        raise DBOSInvalidArgumentError(f"queue {queue_name!r} is reserved for DBOS's internal use")
    if options.duplication_policy == "return-existing" and options.deduplication_id is None:
        raise DBOSInvalidArgumentError(
            "duplication_policy 'return-existing' requires a deduplication_id."
        )
    if config is None:
        return  # not declared here: the row waits for whoever serves that queue
    if config.partitioned and options.queue_partition_key is None:
        raise DBOSInvalidArgumentError(
            f"queue {queue_name!r} is partitioned: enqueue with "
            "SetEnqueueOptions(queue_partition_key=...)"
        )
    if not config.partitioned and options.queue_partition_key is not None:
        raise DBOSInvalidArgumentError(
            f"queue {queue_name!r} is not partitioned: a queue_partition_key cannot be used"
        )


def enqueue(
    executor: Executor,
    queue_name: str,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    config: QueueConfig | None,
) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
    """Write an ENQUEUED/DELAYED row for ``registered`` on ``queue_name``; return its handle.

    Not async: the options in force, the id (``SetWorkflowID``) and, from a workflow body,
    the step id are all taken at the call, so enqueues started concurrently from one body
    are numbered in call order.
    """
    options = enqueue_options()
    check_enqueue(queue_name, config, options)
    slot, assigned = reserve_child(registered)
    extras = start_extras(assigned)
    return _enqueue(executor, queue_name, registered, args, kwargs, options, slot, assigned, extras)


async def _enqueue(
    executor: Executor,
    queue_name: str,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    options: EnqueueOptions,
    slot: Slot | None,
    assigned: str | None,
    extras: StartExtras,
) -> WorkflowHandle[Any]:
    workflow_id = await child_workflow_id(slot, assigned)
    replayed = replayed_enqueue(executor, slot, workflow_id)
    if replayed is not None:
        return replayed
    parent = None if slot is None else slot.ctx
    shape = call_shape(registered, args)
    fmt = workflow_format(executor, registered, parent)
    # Over the payload store's threshold, the inputs are put from a worker thread (the
    # put is whole or absent before the row that references them is written).
    inputs = await executor.codec.settle(
        encode_inputs(executor, registered.name, shape.args, kwargs, fmt, defer=True)
    )
    assert inputs is not None
    timeout_ms, deadline_ms = start_timeout(executor, parent, queued=True)
    now = executor.clock.now_ms()
    new = new_row(
        workflow_id=workflow_id,
        name=registered.name,
        class_name=shape.class_name,
        config_name=shape.config_name,
        inputs=inputs,
        serialization=fmt,
        now_ms=now,
        writer=writer_of(executor, options.app_version),
        placement=placement_for(queue_name, options),
        timeout_ms=timeout_ms,
        deadline_epoch_ms=deadline_ms,
        parent_workflow_id=None if parent is None else parent.workflow_id,
        attributes=attributes_rules.combined(
            extras.attributes, carrier_attributes(executor.tracing)
        ),
    )
    return await insert_enqueued(executor, new, slot, now, options, extras)


def replayed_enqueue(
    executor: Executor, slot: Slot | None, workflow_id: str
) -> WorkflowHandle[Any] | None:
    """What an enqueue from a workflow body returns when replayed: the handle of the child
    its checkpoint recorded (a recorded error is raised again); None if not a replay."""
    recorded = None if slot is None else slot.recorded()
    if recorded is None:
        return None
    checkpoint.replay_value(executor, recorded)  # re-raises a recorded error
    return handle_for(executor, recorded.child_workflow_id or workflow_id)


async def insert_enqueued(
    executor: Executor,
    new: NewWorkflow,
    slot: Slot | None,
    now: int,
    options: EnqueueOptions,
    extras: StartExtras,
) -> WorkflowHandle[Any]:
    """Insert an enqueue's row — from a workflow body with its parent step, under the
    control latch, a deduplication refusal recorded as the step's error — and return the
    handle: the holder's (``return-existing``, recorded as the step's child), or this
    id's once the existing row is checked to be the same workflow and allowed by the
    reuse policy. Wakes the queue."""
    link = None if slot is None else parent_step(slot, now)
    try:
        if slot is None:
            init = await insert_queued(executor, new, link, options.duplication_policy)
        else:
            with checkpoint.control_latch(slot.ctx):
                init = await insert_queued(executor, new, link, options.duplication_policy)
    except DBOSQueueDeduplicatedError as duplicate:
        if slot is not None:
            await checkpoint.record_error(slot, duplicate, started_at_ms=now)
        raise
    if isinstance(init, str):
        if slot is not None:
            # Attached to the holder: record it as this step's child, so a replay (a
            # recovery, a fork from a later step) returns the same workflow instead of
            # enqueueing again once the holder has finished and freed its id.
            await checkpoint.record(slot, started_at_ms=now, child_workflow_id=init)
        return handle_for(executor, init)
    check_same_workflow(new.workflow_id, init, new.name, new.class_name, new.config_name)
    check_reuse(new.workflow_id, init, extras)
    executor.wakeups.wake(queue_key(new.queue_name or INTERNAL_QUEUE))
    return handle_for(executor, new.workflow_id)


async def insert_queued(
    runtime: Runtime, new: NewWorkflow, link: ParentStep | None, duplication_policy: str | None
) -> InitResult | str:
    """Insert a queued row; under ``duplication_policy="return-existing"`` a deduplication
    collision returns the id of the workflow holding the deduplication id instead."""
    while True:
        try:
            return await runtime.sysdb.init_workflow(new, link)
        except DBOSQueueDeduplicatedError:
            if duplication_policy != "return-existing":
                raise
            holder = await runtime.sysdb.find_deduplicated(
                new.queue_name or "", new.deduplication_id or ""
            )
            if holder is not None:
                return holder
            # The holder left the queue between our insert and the lookup: try again.


async def register_queues(
    executor: Executor, queues: list[QueueConfig], on_conflict: Mapping[str, str] | None = None
) -> None:
    """Upsert the queues declared before launch; an existing row is overwritten per the
    queue's ``on_conflict`` mode (default ``"update_if_latest_version"``: only from the
    latest version; ``"always_update"``; ``"never_update"``)."""
    modes = on_conflict or {}
    for config in queues:
        mode = modes.get(config.name, "update_if_latest_version")
        overwrite = {"always_update": True, "never_update": False}.get(
            mode, executor.is_latest_version
        )
        await executor.sysdb.upsert_queue(config, overwrite=overwrite)
