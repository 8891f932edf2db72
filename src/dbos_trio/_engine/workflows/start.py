"""Starting a workflow: its id, its format, its timeout, and the one idempotent insert.

Invariants, and why:

* Starting is one idempotent insert (``init_workflow``): a new id runs; an id that exists
  never runs again here — a finished workflow returns its stored outcome, an active one
  is waited on — and repeats never count a recovery attempt.
* A child's start is a checkpoint of its parent, written in the same transaction as the
  child's row, so a replayed parent finds the child it started instead of starting
  another. The child's id (``SetWorkflowID``, or ``"{parent}-{step id}"``) and the step id
  are taken at the call.
* An id that exists under another function, class or configured instance is refused
  (:class:`DBOSConflictingWorkflowError`), not silently joined.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core.ids import heartbeat_owner_token, random_uuid
from dbos_trio._core.units import timeout_ms as to_timeout_ms
from dbos_trio._engine.context import WorkflowContext, current_step, current_workflow
from dbos_trio._engine.observability.hooks import carrier_attributes
from dbos_trio._engine.recovery import versions
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._engine.workflows.options import (
    StartExtras,
    enqueue_options,
    take_assigned_id,
    timeout_option,
)
from dbos_trio._engine.workflows.rows import Writer, new_row
from dbos_trio._registry import DBOSConfiguredInstance, RegisteredWorkflow, member_kind
from dbos_trio._serialization import PICKLE, PORTABLE_JSON
from dbos_trio._sysdb.records import InitResult, ParentStep, RecordedStep
from dbos_trio.errors import (
    DBOSArgumentTypeError,
    DBOSConflictingWorkflowError,
    DBOSException,
    DBOSValueTooLargeError,
    DBOSWorkflowIDInUseError,
)

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio.workflow")


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
    # Observability only: the queue a dequeued row came from, and the trace carrier
    # persisted with it (read only while tracing is on).
    queue_name: str | None = None
    carrier: dict[str, Any] | None = None


@attrs.frozen
class Started:
    """The result of starting: the id, and a plan if this call must run the body."""

    workflow_id: str
    plan: ExecutionPlan | None
    init: InitResult | None


def writer_of(executor: Executor, app_version: str | None = None) -> Writer:
    """The executor as the writer of a new row (pinned to ``app_version`` if given)."""
    return Writer(
        executor_id=executor.executor_id,
        application_version=app_version or executor.app_version,
        application_id=executor.identity.application_id,
        application_name=executor.app_name,
    )


def parent_for_start(registered: RegisteredWorkflow) -> WorkflowContext | None:
    """The workflow body starting ``registered``, if any; refused from inside a step."""
    if current_step.get() is not None:
        raise DBOSException(
            f"cannot start workflow {registered.name} from inside a step: start it from the "
            "workflow body"
        )
    return current_workflow.get()


def reserve_child(
    registered: RegisteredWorkflow, *, ids: int = 1
) -> tuple[Slot | None, str | None]:
    """At the call: the parent's slot for the child's start (None at top level; ``ids``
    step ids), and the workflow id ``SetWorkflowID`` gave it, if any (see
    :func:`child_workflow_id`)."""
    parent = parent_for_start(registered)
    slot = None if parent is None else checkpoint.reserve_in(parent, registered.name, ids=ids)
    return slot, take_assigned_id()


async def child_workflow_id(slot: Slot | None, assigned: str | None) -> str:
    """The new workflow's id: the one assigned at the call, else ``<parent>-<step id>``
    once the slot is placed (a fresh UUID at top level)."""
    if assigned is not None:
        return assigned
    if slot is not None:
        await slot.placed()
        return f"{slot.ctx.workflow_id}-{slot.function_id}"
    return random_uuid()


def start_timeout(
    executor: Executor, parent: WorkflowContext | None, *, queued: bool, now_ms: int | None = None
) -> tuple[int | None, int | None]:
    """(timeout_ms, deadline_epoch_ms) for a new workflow.

    An explicit ``SetWorkflowTimeout`` wins (the deadline of a queued workflow is set when it
    is dequeued); otherwise a child inherits its parent's absolute deadline. A direct start
    passes ``now_ms``, the reading its row's ``created_at`` gets, so the deadline is exactly
    ``created_at + timeout`` (two readings could straddle a millisecond).
    """
    seconds = timeout_option()
    if seconds is not None:
        if seconds == 0:
            return None, None
        timeout = to_timeout_ms(seconds)
        if queued:
            return timeout, None
        return timeout, (executor.clock.now_ms() if now_ms is None else now_ms) + timeout
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


def encode_inputs(
    executor: Executor,
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fmt: str,
    *,
    defer: bool = False,
) -> str:
    """The inputs' text (``defer``: a payload store put is left to
    :meth:`~dbos_trio._serialization.Codec.settle`); a value that cannot be stored raises
    :class:`DBOSArgumentTypeError`, one over the size limit :class:`DBOSValueTooLargeError`."""
    try:
        what = f"the inputs of workflow {name}"
        return executor.codec.encode_inputs(args, kwargs, fmt, what, defer=defer)
    except DBOSValueTooLargeError:
        raise  # names the value, its size and the limit already
    except Exception as error:
        raise DBOSArgumentTypeError(
            f"cannot serialize the arguments of workflow {name} as {fmt}: {error}"
        ) from error


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


def check_reuse(workflow_id: str, init: InitResult, extras: StartExtras) -> None:
    """Under ``workflow_id_reuse_policy="reject"``, refuse an id another start made
    (a retried insert of our own row comes back created, by its creator token)."""
    if not init.created and extras.reuse_policy == "reject":
        raise DBOSWorkflowIDInUseError(
            workflow_id, workflow_status=init.status, workflow_name=init.name
        )


def parent_step(slot: Slot, now_ms: int) -> ParentStep:
    """The parent's checkpoint for a child's start, written with the child's row."""
    return ParentStep(
        workflow_id=slot.ctx.workflow_id,
        owner_xid=slot.ctx.owner_xid,
        function_id=slot.function_id,
        function_name=slot.name,
        started_at_ms=now_ms,
        application_name=slot.executor.app_name,
    )


async def start(
    executor: Executor,
    registered: RegisteredWorkflow,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    slot: Slot | None,
    workflow_id: str,
    extras: StartExtras | None = None,
) -> Started:
    """Create (or find) the row of a direct start; return a plan if this call runs it.

    ``slot`` is the parent's checkpoint for the start (None at top level) and
    ``workflow_id`` the id resolved for it (:func:`child_workflow_id`).
    """
    extras = extras or StartExtras()
    shape = call_shape(registered, args)
    parent = None if slot is None else slot.ctx
    if slot is not None:
        await slot.placed()
        recorded = slot.recorded()
        if recorded is not None:
            if recorded.error is not None:
                await checkpoint.replayed_value(executor, recorded)
            return Started(recorded.child_workflow_id or workflow_id, None, None)
    fmt = workflow_format(executor, registered, parent)
    # Large inputs go to the payload store from a worker thread, before the row exists.
    inputs = await executor.codec.settle(
        encode_inputs(executor, registered.name, shape.args, kwargs, fmt, defer=True)
    )
    assert inputs is not None
    now = executor.clock.now_ms()
    timeout_ms, deadline_ms = start_timeout(executor, parent, queued=False, now_ms=now)
    token = heartbeat_owner_token()
    new = new_row(
        workflow_id=workflow_id,
        name=registered.name,
        class_name=shape.class_name,
        config_name=shape.config_name,
        inputs=inputs,
        serialization=fmt,
        now_ms=now,
        writer=writer_of(executor, enqueue_options().app_version),
        owner_xid=token,
        timeout_ms=timeout_ms,
        deadline_epoch_ms=deadline_ms,
        parent_workflow_id=None if parent is None else parent.workflow_id,
        attributes=attributes_rules.combined(
            extras.attributes, carrier_attributes(executor.tracing)
        ),
    )
    link = None if slot is None else parent_step(slot, now)
    # Until its execution is registered (begin_local), a new PENDING row of this executor
    # must not look abandoned to the orphan sweep.
    executor.starting.add(workflow_id)
    try:
        if parent is None:
            init = await executor.sysdb.init_workflow(new, link)
        else:
            with checkpoint.control_latch(parent):
                init = await executor.sysdb.init_workflow(new, link)
    except BaseException:
        executor.starting.discard(workflow_id)
        raise
    if not init.created:
        executor.starting.discard(workflow_id)
    check_same_workflow(workflow_id, init, registered.name, shape.class_name, shape.config_name)
    check_reuse(workflow_id, init, extras)
    if not init.created:
        logger.debug("workflow %s exists (%s): not running it again", workflow_id, init.status)
        if parent is None and init.status in versions.ACTIVE:
            # Starting an unfinished existing id is a wait on it: say now if nothing can
            # run it (two reads, only for this case).
            await versions.warn_if_stranded(executor, workflow_id)
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
