"""Enqueueing workflows, and registering queues.

An enqueue writes one ENQUEUED (or DELAYED) row with its inputs and never runs it: a
dequeue worker — in this process or any other serving the queue — claims it. An enqueue
in this process wakes this process's worker for that queue at once, so a local enqueue
does not wait for the next poll.
"""

from __future__ import annotations

import uuid
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from .._context import EnqueueOptions, WorkflowContext, enqueue_options
from .._errors import DBOSException, DBOSQueueDeduplicatedError, SystemDatabaseError
from .._registry import RegisteredWorkflow
from ..core.admission import RESERVED_QUEUE_PREFIX, QueueConfig
from ..sysdb.records import DELAYED, ENQUEUED, INTERNAL_QUEUE, NewWorkflow, ParentStep
from ..sysdb.wakeups import queue_key
from . import checkpoint
from .handle import WorkflowHandle, handle_for
from .workflow import (
    _parent_for_start,
    call_shape,
    check_same_workflow,
    new_workflow_id,
    start_timeout,
    workflow_format,
)

if TYPE_CHECKING:
    from .._executor import Executor


def check_enqueue(queue_name: str, config: QueueConfig | None, options: EnqueueOptions) -> None:
    """Reject what can be known wrong before anything is written."""
    if not isinstance(queue_name, str) or not queue_name:
        raise DBOSException(f"queue name must be a non-empty string, not {queue_name!r}")
    if queue_name.startswith(RESERVED_QUEUE_PREFIX) and queue_name != INTERNAL_QUEUE:
        raise DBOSException(f"queue {queue_name!r} is reserved for DBOS's internal use")
    if options.duplication_policy == "return-existing" and options.deduplication_id is None:
        raise DBOSException("duplication_policy='return-existing' needs a deduplication_id")
    if config is None:
        return  # not declared here: the row waits for whoever serves that queue
    if config.partitioned and options.queue_partition_key is None:
        raise DBOSException(
            f"queue {queue_name!r} is partitioned: enqueue with "
            "SetEnqueueOptions(queue_partition_key=...)"
        )
    if not config.partitioned and options.queue_partition_key is not None:
        raise DBOSException(
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
    parent = _parent_for_start(registered)
    function_id = parent.reserve_id() if parent is not None else None
    workflow_id = new_workflow_id(parent, function_id)
    return _enqueue(
        executor, queue_name, registered, args, kwargs, options, parent, function_id, workflow_id
    )


async def _enqueue(
    executor: Executor,
    queue_name: str,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    options: EnqueueOptions,
    parent: WorkflowContext | None,
    function_id: int | None,
    workflow_id: str,
) -> WorkflowHandle[Any]:
    if parent is not None and function_id is not None:
        recorded = checkpoint.replayed(parent, function_id, registered.name)
        if recorded is not None:
            checkpoint.replay_value(executor, recorded)  # re-raises a recorded error
            return handle_for(executor, recorded.child_workflow_id or workflow_id)
    shape = call_shape(registered, args)
    fmt = workflow_format(executor, registered, parent)
    try:
        inputs = executor.codec.encode_inputs(shape.args, kwargs, fmt)
    except Exception as error:
        raise DBOSException(
            f"cannot serialize the arguments of workflow {registered.name} as {fmt}: {error}"
        ) from error
    timeout_ms, deadline_ms = start_timeout(executor, parent, queued=True)
    now = executor.clock.now_ms()
    # Any delay, even 0, makes the row DELAYED until the next sweep releases it (dbos 3.4).
    delayed = options.delay_seconds is not None
    new = NewWorkflow(
        workflow_id=workflow_id,
        status=DELAYED if delayed else ENQUEUED,
        name=registered.name,
        class_name=shape.class_name,
        config_name=shape.config_name,
        inputs=inputs,
        serialization=fmt,
        creator_xid=str(uuid.uuid4()),
        owner_xid=None,
        recovery_attempts=0,
        created_at_ms=now,
        executor_id=executor.executor_id,
        application_version=options.app_version or executor.app_version,
        application_id=executor.identity.application_id,
        application_name=executor.app_name,
        queue_name=queue_name,
        deduplication_id=options.deduplication_id,
        priority=options.priority or 0,
        queue_partition_key=options.queue_partition_key,
        timeout_ms=timeout_ms,
        deadline_epoch_ms=deadline_ms,
        delay_until_epoch_ms=now + round(options.delay_seconds * 1000)
        if delayed and options.delay_seconds is not None
        else None,
        parent_workflow_id=parent.workflow_id if parent is not None else None,
    )
    link = None
    if parent is not None and function_id is not None:
        link = ParentStep(
            workflow_id=parent.workflow_id,
            owner_xid=parent.owner_xid,
            function_id=function_id,
            function_name=registered.name,
            started_at_ms=now,
            application_name=executor.app_name,
        )
    while True:
        try:
            init = await executor.sysdb.init_workflow(new, link)
            break
        except DBOSQueueDeduplicatedError as duplicate:
            if options.duplication_policy == "return-existing":
                holder = await executor.sysdb.find_deduplicated(
                    queue_name, options.deduplication_id or ""
                )
                if holder is None:
                    continue  # the holder finished meanwhile: the id is free again
                return handle_for(executor, holder)
            if parent is not None and function_id is not None:
                await checkpoint.record_error(
                    executor, parent, function_id, registered.name, duplicate, started_at_ms=now
                )
            raise
        except SystemDatabaseError as failure:
            if parent is not None:
                parent.control_failure = failure
            raise
    check_same_workflow(workflow_id, init, registered.name, shape.class_name, shape.config_name)
    executor.wakeups.wake(queue_key(queue_name))
    return handle_for(executor, workflow_id)


async def register_queues(executor: Executor, queues: list[QueueConfig]) -> None:
    """Upsert the queues declared before launch (overwriting only from the latest version)."""
    for config in queues:
        await executor.sysdb.upsert_queue(config, overwrite=executor.is_latest_version)
