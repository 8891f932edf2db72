"""Enqueueing a workflow by name from inside the application (``dbos.enqueue``).

The row is the one a client would write for the same options — the function named by
``workflow_name`` (and class/instance names), which may be registered only in another
process — except that it belongs to this application and, from a workflow body, is this
workflow's child: its start is a checkpoint of the parent, written in the same
transaction as the row, its step id taken at the call. Options left unset fall back to the
``SetWorkflowID`` / ``SetWorkflowTimeout`` / ``SetEnqueueOptions`` /
``SetWorkflowAttributes`` in force (the options' attributes merge over the ambient ones,
key by key), as dbos 3.4 does; the caller's own application version is never stamped (the
target may belong to another executor), so unless the options or a ``SetEnqueueOptions``
name one, the latest version runs it.
"""

from __future__ import annotations

import json
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import attrs

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core.admission import QueueConfig
from dbos_trio._core.units import timeout_ms as to_timeout_ms
from dbos_trio._engine.context import current_step, current_workflow
from dbos_trio._engine.observability.hooks import carrier_attributes
from dbos_trio._engine.queues.enqueue import check_enqueue, insert_enqueued, replayed_enqueue
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._engine.workflows.handle import WorkflowHandle
from dbos_trio._engine.workflows.options import (
    EnqueueOptions,
    StartExtras,
    enqueue_options,
    start_extras,
    take_assigned_id,
)
from dbos_trio._engine.workflows.rows import Writer, new_row, placement_for
from dbos_trio._engine.workflows.start import child_workflow_id, start_timeout
from dbos_trio._serialization import PORTABLE_JSON
from dbos_trio.errors import DBOSArgumentTypeError, DBOSException, DBOSValueTooLargeError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor


@attrs.frozen(kw_only=True)
class NamedEnqueue:
    """What to enqueue: the target by name, its queue, and the options the caller set
    (None: fall back to the ambient context managers)."""

    workflow_name: str
    queue_name: str
    class_name: str | None = None
    config_name: str | None = None
    workflow_id: str | None = None
    workflow_timeout: float | None = None
    placement: EnqueueOptions = attrs.field(factory=EnqueueOptions)
    app_version: str | None = None
    fmt: str | None = None  # the stored format; None: the parent's if portable, else default
    attributes: str | None = None
    reuse_policy: str | None = None
    application_name: str | None = None
    authenticated_user: str | None = None
    authenticated_roles: tuple[str, ...] | None = None


def _merged(own: EnqueueOptions, ambient: EnqueueOptions) -> EnqueueOptions:
    return EnqueueOptions(
        deduplication_id=own.deduplication_id or ambient.deduplication_id,
        priority=own.priority if own.priority is not None else ambient.priority,
        app_version=None,  # the row's version is the request's (see enqueue_named)
        queue_partition_key=own.queue_partition_key or ambient.queue_partition_key,
        delay_seconds=own.delay_seconds if own.delay_seconds is not None else ambient.delay_seconds,
        duplication_policy=own.duplication_policy or ambient.duplication_policy,
    )


def enqueue_named(
    executor: Executor, request: NamedEnqueue, args: tuple[Any, ...], kwargs: dict[str, Any],
    *, config: QueueConfig | None,
) -> Coroutine[Any, Any, WorkflowHandle[Any]]:  # fmt: skip
    """Write the queued row; not async: options, id and step id are taken now."""
    if current_step.get() is not None:
        raise DBOSException(
            f"cannot enqueue workflow {request.workflow_name} from inside a step: enqueue it "
            "from the workflow body"
        )
    ambient_options = enqueue_options()
    options = _merged(request.placement, ambient_options)
    check_enqueue(request.queue_name, config, options)
    if request.app_version is None and ambient_options.app_version is not None:
        # A SetEnqueueOptions(app_version=...) in force applies here as to any enqueue.
        request = attrs.evolve(request, app_version=ambient_options.app_version)
    parent = current_workflow.get()
    slot = None if parent is None else checkpoint.reserve_in(parent, request.workflow_name)
    assigned = request.workflow_id or take_assigned_id()
    ambient = start_extras(assigned)
    extras = StartExtras(
        reuse_policy=request.reuse_policy or ambient.reuse_policy,  # type: ignore[arg-type]
        # Merged, not replaced: the ambient attributes stay, the options' win per key.
        attributes=attributes_rules.combined(ambient.attributes, request.attributes),
    )
    timeout = start_timeout(executor, parent, queued=True)
    if request.workflow_timeout is not None:
        timeout = (to_timeout_ms(request.workflow_timeout), None)
    return _enqueue(executor, request, args, kwargs, options, slot, assigned, extras, timeout)


async def _enqueue(
    executor: Executor,
    request: NamedEnqueue,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    options: EnqueueOptions,
    slot: Slot | None,
    assigned: str | None,
    extras: StartExtras,
    timeout: tuple[int | None, int | None],
) -> WorkflowHandle[Any]:
    workflow_id = await child_workflow_id(slot, assigned)
    replayed = replayed_enqueue(executor, slot, workflow_id)
    if replayed is not None:
        return replayed
    parent = None if slot is None else slot.ctx
    fmt = request.fmt
    if fmt is None:
        portable_parent = parent is not None and parent.serialization == PORTABLE_JSON
        fmt = PORTABLE_JSON if portable_parent else executor.codec.default_format
    try:
        inputs = executor.codec.encode_inputs(
            args, kwargs, fmt, f"the inputs of workflow {request.workflow_name}"
        )
    except DBOSValueTooLargeError:
        raise  # names the value, its size and the limit already
    except Exception as error:
        raise DBOSArgumentTypeError(
            f"cannot serialize the arguments of workflow {request.workflow_name} as {fmt}: {error}"
        ) from error
    now = executor.clock.now_ms()
    new = new_row(
        workflow_id=workflow_id,
        name=request.workflow_name,
        class_name=request.class_name,
        config_name=request.config_name,
        inputs=inputs,
        serialization=fmt,
        now_ms=now,
        writer=Writer(
            executor_id=None,
            application_version=request.app_version,
            application_id=executor.identity.application_id,
            application_name=request.application_name or executor.app_name,
        ),
        placement=placement_for(request.queue_name, options),
        timeout_ms=timeout[0],
        deadline_epoch_ms=timeout[1],
        parent_workflow_id=None if parent is None else parent.workflow_id,
        authenticated_user=request.authenticated_user,
        authenticated_roles=json.dumps(list(request.authenticated_roles))
        if request.authenticated_roles
        else None,
        attributes=attributes_rules.combined(
            extras.attributes, carrier_attributes(executor.tracing)
        ),
    )
    return await insert_enqueued(executor, new, slot, now, options, extras)
