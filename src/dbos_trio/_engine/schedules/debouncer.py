"""Debouncing from an executor (``dbos.debouncer(...)``): the loop of :mod:`.debounce`, with
its bounces and fresh enqueues checkpointed when called from a workflow body.

Everything that can be known wrong — the key, the period, enqueue options a debounce
owns, a queue that is not declared, a partitioned queue — raises at the call, before any
write. ``SetWorkflowID`` pins the id of the workflow a fresh enqueue makes (a bounce
returns the existing workflow's handle); ``SetWorkflowTimeout`` applies to it, but a
debounced workflow never inherits its caller's deadline.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core.admission import QueueConfig
from dbos_trio._core.ids import random_uuid
from dbos_trio._core.statuses import DELAYED
from dbos_trio._engine.context import WorkflowContext, workflow_outside_steps
from dbos_trio._engine.observability.hooks import carrier_attributes
from dbos_trio._engine.queues.enqueue import insert_queued
from dbos_trio._engine.schedules.debounce_loop import (
    BOUNCE_STEP,
    check_period,
    coalesce,
    deadline_and_delay,
    deduplication_id,
    reject_options,
)
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._engine.workflows.handle import WorkflowHandle, handle_for
from dbos_trio._engine.workflows.options import enqueue_options, start_extras, take_assigned_id
from dbos_trio._engine.workflows.rows import Placement, Writer, new_row
from dbos_trio._engine.workflows.start import (
    call_shape,
    check_same_workflow,
    encode_inputs,
    parent_step,
    start_timeout,
    workflow_format,
    writer_of,
)
from dbos_trio._registry import RegisteredWorkflow
from dbos_trio._sysdb.records import INTERNAL_QUEUE, Bounce, BounceResult
from dbos_trio.errors import DBOSException, DBOSQueueDeduplicatedError, PortableWorkflowError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor


@attrs.frozen
class Target:
    """What a debouncer debounces: a registered workflow, on a queue, with a timeout."""

    registered: RegisteredWorkflow
    queue_name: str | None
    timeout_sec: float | None
    # The application debounced for (None: the executor's own).
    application_name: str | None = None


def debounce(
    executor: Executor,
    target: Target,
    declared: Mapping[str, QueueConfig],
    key: str,
    period_sec: float,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
    """Bounce ``key`` (see :mod:`.debounce`). Not async: the options in force, the pinned
    id and, from a workflow body, the first step id are taken at the call."""
    registered = target.registered
    key_id = deduplication_id(registered.name, key)
    period_ms = check_period(period_sec)
    options = enqueue_options()
    reject_options(
        deduplication_id=options.deduplication_id,
        delay_seconds=options.delay_seconds,
        priority=options.priority,
        queue_partition_key=options.queue_partition_key,
        duplication_policy=options.duplication_policy,
    )
    parent = workflow_outside_steps()  # inside a step: a plain call, as in dbos 3.4
    pinned = take_assigned_id()
    # The SetWorkflowAttributes in force go on the row a fresh enqueue makes, as dbos 3.4's.
    attributes = start_extras(pinned).attributes
    first = None if parent is None else checkpoint.reserve_in(parent, BOUNCE_STEP)
    run = _Debounce(executor, target, key_id, period_ms, args, kwargs, parent, pinned, first)
    run.attributes = attributes
    return run.run(declared)


class _Debounce:
    """One debounce call: its inputs, encoded once, and where its checkpoints go."""

    def __init__(
        self,
        executor: Executor,
        target: Target,
        key_id: str,
        period_ms: int,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        parent: WorkflowContext | None,
        pinned: str | None,
        first: Slot | None,
    ) -> None:
        self.executor = executor
        self.target = target
        self.key_id = key_id
        self.period_ms = period_ms
        self.kwargs = kwargs
        self.parent = parent
        self.pinned = pinned
        self.next_slot = first
        registered = target.registered
        self.shape = call_shape(registered, args)
        self.fmt = workflow_format(executor, registered, parent)
        self.inputs = encode_inputs(executor, registered.name, self.shape.args, kwargs, self.fmt)
        self.queue = target.queue_name or INTERNAL_QUEUE
        self.attributes: str | None = None
        # The one owner of the whole call: the bounce, the conflict check, a fresh row.
        self.application = target.application_name or executor.app_name

    async def run(self, declared: Mapping[str, QueueConfig]) -> WorkflowHandle[Any]:
        await self._check_queue(declared)
        return await coalesce(
            workflow_name=self.target.registered.name,
            queue_name=self.queue,
            key_id=self.key_id,
            application=self.application,
            bounce=self._bounce,
            enqueue=self._enqueue,
            handle=lambda workflow_id: handle_for(self.executor, workflow_id),
        )

    async def _check_queue(self, declared: Mapping[str, QueueConfig]) -> None:
        if self.queue == INTERNAL_QUEUE:
            return
        config = declared.get(self.queue) or await self.executor.sysdb.get_queue(self.queue)
        if config is None:
            raise DBOSException(f"Invalid queue name provided to debouncer: {self.queue}")
        if config.partitioned:
            raise DBOSException(
                f"Cannot debounce on queue {self.queue!r}: partitioned queues do not support "
                "the deduplication debouncing needs."
            )

    def _slot(self, name: str) -> Slot | None:
        if self.parent is None:
            return None
        slot, self.next_slot = self.next_slot, None
        return slot if slot is not None else checkpoint.reserve_in(self.parent, name)

    async def _bounce(self) -> BounceResult:
        slot = self._slot(BOUNCE_STEP)
        if slot is not None:
            recorded = slot.recorded()
            if recorded is not None and recorded.output is not None:
                return BounceResult.from_json(recorded.output)
        executor = self.executor
        now = executor.clock.now_ms()
        bounce = Bounce(
            workflow_name=self.target.registered.name,
            queue_name=self.queue,
            deduplication_id=self.key_id,
            delay_until_epoch_ms=now + self.period_ms,
            inputs=self.inputs,
            serialization=self.fmt,
            application_name=self.application,
            now_ms=now,
        )
        if slot is None:
            return await executor.sysdb.bounce(bounce, None)
        with checkpoint.control_latch(slot.ctx):
            return await executor.sysdb.bounce(bounce, slot.caller())

    def _writer(self) -> Writer:
        """The fresh row's writer: this executor, or — debouncing for another application
        — a row of that application with no version, which its latest version runs."""
        if self.application == self.executor.app_name:
            return writer_of(self.executor, enqueue_options().app_version)
        return Writer(
            executor_id=None,
            application_version=enqueue_options().app_version,
            application_id=None,
            application_name=self.application,
        )

    async def _enqueue(self) -> WorkflowHandle[Any]:
        executor, registered = self.executor, self.target.registered
        slot = self._slot(registered.name)
        if slot is not None:
            recorded = slot.recorded()
            if recorded is not None:
                _replay_enqueue(executor, recorded)
                return handle_for(executor, recorded.child_workflow_id or "")
        if self.pinned is not None:
            workflow_id = self.pinned
        elif slot is not None:
            workflow_id = f"{slot.ctx.workflow_id}-{slot.function_id}"
        else:
            workflow_id = random_uuid()
        now = executor.clock.now_ms()
        deadline, delay_until = deadline_and_delay(now, self.period_ms, self.target.timeout_sec)
        timeout_ms, _ = start_timeout(executor, None, queued=True)
        new = new_row(
            workflow_id=workflow_id,
            name=registered.name,
            class_name=self.shape.class_name,
            config_name=self.shape.config_name,
            inputs=self.inputs,
            serialization=self.fmt,
            now_ms=now,
            writer=self._writer(),
            placement=Placement(queue_name=self.queue, deduplication_id=self.key_id),
            timeout_ms=timeout_ms,
            parent_workflow_id=None if self.parent is None else self.parent.workflow_id,
            # The first bounce's attributes and trace: the one that created the row.
            attributes=attributes_rules.combined(
                self.attributes, carrier_attributes(executor.tracing)
            ),
        )
        new = attrs.evolve(
            new,
            status=DELAYED,
            delay_until_epoch_ms=delay_until,
            is_debounced=True,
            debounce_deadline_epoch_ms=deadline,
        )
        link = None if slot is None else parent_step(slot, now)
        try:
            if slot is None:
                init = await insert_queued(executor, new, link, None)
            else:
                with checkpoint.control_latch(slot.ctx):
                    init = await insert_queued(executor, new, link, None)
        except DBOSQueueDeduplicatedError as collided:
            if slot is not None:
                await checkpoint.record_error(slot, collided, started_at_ms=now)
            raise
        assert not isinstance(init, str)
        check_same_workflow(
            workflow_id, init, registered.name, self.shape.class_name, self.shape.config_name
        )
        return handle_for(executor, workflow_id)


def _replay_enqueue(executor: Executor, recorded: Any) -> None:
    """Replay a fresh enqueue's checkpoint: a recorded deduplication is raised again (in
    either format it was recorded in), so the loop goes round as it did."""
    try:
        checkpoint.replay_value(executor, recorded)
    except PortableWorkflowError as error:
        if error.name == DBOSQueueDeduplicatedError.__name__:
            raise DBOSQueueDeduplicatedError(recorded.child_workflow_id or "", "", "") from error
        raise
