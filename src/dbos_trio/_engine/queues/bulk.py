"""Enqueueing many workflows at once: ``Queue.enqueue_many`` and ``Client.enqueue_many``.

Invariants, and why:

* **Every row is checked before anything is written.** Its options (the queue's
  partitioning, a deduplication policy without an id, ...), its arguments (serialized
  here) and a workflow id given twice in one call are refused with a
  :class:`~dbos_trio.DBOSInvalidArgumentError` naming the row's index, and nothing of the
  batch is written: a bad row is the caller's mistake, found as one-by-one enqueues
  would find it, only sooner.
* **Each row as one-by-one.** The rows go through ``SystemDatabase.init_workflows`` (one
  statement per thousand rows on PostgreSQL), which makes or finds each row exactly as
  ``init_workflow`` would: an existing workflow id returns that workflow (checked to be
  the same function, and against its reuse policy), a held deduplication id is refused
  for that row, or with ``duplication_policy="return-existing"`` answered with the
  holder.
* **Not all or nothing.** Every row that can be written is. Rows refused while writing
  (a held deduplication id, an id naming another workflow) are collected; if there are
  any, :class:`~dbos_trio.DBOSEnqueueManyError` lists each by index with its error and
  carries the ids of the rows that were enqueued, so the caller can retry just the
  refused ones. A database failure mid-way raises it as it is; rows of chunks already
  committed stay, and re-enqueueing the same ids is idempotent.
* **Not from a workflow body.** A child enqueue is a checkpointed step of its parent,
  which a batch statement cannot fence; refused there (enqueue one at a time).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core.admission import QueueConfig
from dbos_trio._core.ids import random_uuid
from dbos_trio._engine.observability.hooks import carrier_attributes
from dbos_trio._engine.queues.enqueue import check_enqueue, insert_queued
from dbos_trio._engine.workflows.options import (
    EnqueueOptions,
    StartExtras,
    enqueue_options,
    start_extras,
    take_assigned_id,
)
from dbos_trio._engine.workflows.rows import new_row, placement_for
from dbos_trio._engine.workflows.start import (
    call_shape,
    check_reuse,
    check_same_workflow,
    encode_inputs,
    parent_for_start,
    start_timeout,
    workflow_format,
    writer_of,
)
from dbos_trio._registry import RegisteredWorkflow, resolve_workflow
from dbos_trio._serialization import Codec
from dbos_trio._sysdb.records import InitResult, NewWorkflow
from dbos_trio._sysdb.similar import SimilarWorkflows
from dbos_trio.errors import (
    DBOSEnqueueManyError,
    DBOSException,
    DBOSInvalidArgumentError,
    DBOSQueueDeduplicatedError,
    DBOSValueTooLargeError,
)

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, Runtime


def _optional_text(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise DBOSInvalidArgumentError(
            f"EnqueueCall.{attribute.name} must be a non-empty string or None, not {value!r}"
        )


@attrs.frozen(kw_only=True)
class EnqueueCall:
    """One workflow of an ``enqueue_many``: its arguments, and the options of this row
    alone (each ``None`` takes the batch's: ``SetEnqueueOptions`` for
    ``Queue.enqueue_many``, the ``EnqueueOptions`` for ``Client.enqueue_many``).

    A plain tuple in place of an ``EnqueueCall`` is the positional arguments alone.
    """

    args: tuple[Any, ...] = attrs.field(default=(), converter=tuple)
    kwargs: Mapping[str, Any] = attrs.field(factory=dict)
    workflow_id: str | None = attrs.field(default=None, validator=_optional_text)
    deduplication_id: str | None = attrs.field(default=None, validator=_optional_text)
    priority: int | None = None
    queue_partition_key: str | None = attrs.field(default=None, validator=_optional_text)
    delay_seconds: float | None = None


@attrs.frozen
class PlannedRow:
    """A checked row, ready to write, with what its answer is checked against."""

    new: NewWorkflow
    duplication_policy: str | None
    extras: StartExtras


@attrs.define
class BulkPlan:
    """The checked rows of one ``enqueue_many``, by their index in the call.

    The plain calls (no options of their own but an id) share one template row and are
    kept as two strings each (``plain``: id and inputs, with their indexes); the others
    are full rows (``singles``). Written as :func:`write_rows` says."""

    size: int
    duplication_policy: str | None
    extras: StartExtras
    template: NewWorkflow | None = None
    plain_indexes: list[int] = attrs.Factory(list)
    plain_ids: list[str] = attrs.Factory(list)
    plain_inputs: list[str] = attrs.Factory(list)
    singles: list[tuple[int, PlannedRow]] = attrs.Factory(list)

    def add_single(self, index: int, row: PlannedRow) -> None:
        self.singles.append((index, row))

    def start_plain(self, index: int, template: NewWorkflow) -> None:
        """The first plain call: its full row becomes the template of the others."""
        self.template = template
        self.add_plain(index, template.workflow_id, template.inputs)

    def add_plain(self, index: int, workflow_id: str, inputs: str) -> None:
        self.plain_indexes.append(index)
        self.plain_ids.append(workflow_id)
        self.plain_inputs.append(inputs)

    def plain_row(self, position: int) -> PlannedRow:
        """The ``position``-th plain call as a full row (to answer it one by one)."""
        assert self.template is not None
        new = attrs.evolve(
            self.template,
            workflow_id=self.plain_ids[position],
            inputs=self.plain_inputs[position],
        )
        return PlannedRow(new, self.duplication_policy, self.extras)

    def workflow_ids(self) -> list[str]:
        """Every row's workflow id, by index."""
        ids = [""] * self.size
        for index, workflow_id in zip(self.plain_indexes, self.plain_ids, strict=True):
            ids[index] = workflow_id
        for index, row in self.singles:
            ids[index] = row.new.workflow_id
        return ids


def resolve_bound(fn: Any) -> tuple[RegisteredWorkflow, tuple[Any, ...]]:
    """The registered workflow ``fn`` names, and its bound instance (for a method)."""
    return resolve_workflow(fn, ())


def as_calls(calls: Iterable[EnqueueCall | tuple[Any, ...]]) -> list[EnqueueCall]:
    """The batch as ``EnqueueCall`` s; anything else raises naming its index."""
    if isinstance(calls, (str, bytes, Mapping)):
        raise DBOSInvalidArgumentError(
            f"enqueue_many needs a list of EnqueueCall (or argument tuples), not "
            f"{type(calls).__name__}"
        )
    checked = []
    for index, call in enumerate(calls):
        if isinstance(call, EnqueueCall):
            checked.append(call)
        elif isinstance(call, tuple):
            checked.append(EnqueueCall(args=call))
        else:
            raise DBOSInvalidArgumentError(
                f"enqueue_many row {index}: an EnqueueCall or a tuple of arguments, not "
                f"{type(call).__name__}"
            )
    return checked


def row_options(base: Any, call: EnqueueCall) -> Any:
    """``base`` (either face's options) with the row's own options over it."""
    own = {
        field: getattr(call, field)
        for field in ("deduplication_id", "priority", "queue_partition_key", "delay_seconds")
        if getattr(call, field) is not None
    }
    return attrs.evolve(base, **own) if own else base


def has_own_options(call: EnqueueCall) -> bool:
    """Whether the call sets an option of its own besides its id (so its row cannot be
    made from the batch's template)."""
    return (
        call.deduplication_id is not None
        or call.priority is not None
        or call.queue_partition_key is not None
        or call.delay_seconds is not None
    )


def add_plain_call(plan: BulkPlan, index: int, codec: Codec, fmt: str, call: EnqueueCall) -> None:
    """A plain call (:func:`has_own_options` false) after the first: only its id and
    inputs are its own, all else is the template's (the creating insert's token too).
    Arguments that cannot be serialized raise :class:`~dbos_trio.DBOSException`."""
    assert plan.template is not None
    try:
        inputs = codec.encode_inputs(call.args, dict(call.kwargs), fmt, "the workflow inputs")
    except DBOSValueTooLargeError:
        raise  # names the value, its size and the limit already
    except Exception as error:
        raise DBOSException(
            f"cannot serialize the arguments of workflow {plan.template.name} as {fmt}: {error}"
        ) from error
    plan.add_plain(index, call.workflow_id or random_uuid(), inputs)


def check_ids(plan: BulkPlan) -> None:
    """Refuse one workflow id on two rows: the second would only find the first."""
    seen: dict[str, int] = {}
    for index, workflow_id in enumerate(plan.workflow_ids()):
        first = seen.setdefault(workflow_id, index)
        if first != index:
            raise DBOSInvalidArgumentError(
                f"enqueue_many rows {first} and {index} have the same workflow id {workflow_id!r}"
            )


def plan_queue_rows(
    executor: Executor,
    queue_name: str,
    config: QueueConfig | None,
    registered: RegisteredWorkflow,
    calls: Sequence[EnqueueCall],
) -> BulkPlan:
    """Every row of ``Queue.enqueue_many``, checked; raises before anything is written."""
    if parent_for_start(registered) is not None:
        raise DBOSException(
            "enqueue_many cannot be called from a workflow body (each child enqueue is a "
            "checkpoint of its parent): enqueue them one at a time there"
        )
    if take_assigned_id() is not None:
        raise DBOSInvalidArgumentError(
            "enqueue_many: SetWorkflowID names one workflow; give each row its own "
            "EnqueueCall(workflow_id=...)"
        )
    base = enqueue_options()
    extras = start_extras(None)
    fmt = workflow_format(executor, registered, None)
    writer = writer_of(executor, base.app_version)
    carried = attributes_rules.combined(extras.attributes, carrier_attributes(executor.tracing))
    plan = BulkPlan(len(calls), base.duplication_policy, extras)
    for index, call in enumerate(calls):
        options: EnqueueOptions = row_options(base, call)
        try:
            shape = call_shape(registered, call.args)
            template = plan.template
            # A plain call like the template's shares its checked options and placement.
            plain = (
                template is not None
                and not has_own_options(call)
                and (shape.class_name, shape.config_name)
                == (template.class_name, template.config_name)
            )
            if not plain:
                check_enqueue(queue_name, config, options)
            inputs = encode_inputs(executor, registered.name, shape.args, dict(call.kwargs), fmt)
            if plain:
                plan.add_plain(index, call.workflow_id or random_uuid(), inputs)
                continue
            placement = placement_for(queue_name, options)
        except DBOSException as error:
            raise DBOSInvalidArgumentError(f"enqueue_many row {index}: {error.message}") from error
        timeout_ms, deadline_ms = start_timeout(executor, None, queued=True)
        new = new_row(
            workflow_id=call.workflow_id or random_uuid(),
            name=registered.name,
            class_name=shape.class_name,
            config_name=shape.config_name,
            inputs=inputs,
            serialization=fmt,
            now_ms=executor.clock.now_ms(),
            writer=writer,
            placement=placement,
            timeout_ms=timeout_ms,
            deadline_epoch_ms=deadline_ms,
            parent_workflow_id=None,
            attributes=carried,
        )
        if template is None and not has_own_options(call):
            plan.start_plain(index, new)
        else:
            plan.add_single(index, PlannedRow(new, options.duplication_policy, extras))
    check_ids(plan)
    return plan


async def write_rows(runtime: Runtime, plan: BulkPlan) -> list[str]:
    """Write the checked rows (the plain calls as similar rows, then the others); the id
    each row's handle follows (the holder's for a ``return-existing`` collision). Raises
    :class:`DBOSEnqueueManyError` if any row was refused, after every other row was
    written (see the module docstring)."""
    ids: list[str | None] = [None] * plan.size
    failures: dict[int, DBOSException] = {}

    async def answer(index: int, row: PlannedRow, result: InitResult | Refusal) -> None:
        try:
            ids[index] = await _answer(runtime, row, result)
        except DBOSException as error:
            failures[index] = error

    if plan.template is not None:
        similar = SimilarWorkflows(plan.template, plan.plain_ids, plan.plain_inputs)
        results = await runtime.sysdb.init_similar_workflows(similar)
        for position, (index, result) in enumerate(zip(plan.plain_indexes, results, strict=True)):
            if isinstance(result, InitResult) and result.created:
                ids[index] = plan.plain_ids[position]  # ours: nothing to check
            else:
                await answer(index, plan.plain_row(position), result)
    if plan.singles:
        results = await runtime.sysdb.init_workflows([row.new for _, row in plan.singles])
        for (index, row), result in zip(plan.singles, results, strict=True):
            await answer(index, row, result)
    if failures:
        raise DBOSEnqueueManyError(failures, ids)
    return [workflow_id for workflow_id in ids if workflow_id is not None]


Refusal = DBOSQueueDeduplicatedError


async def _answer(runtime: Runtime, row: PlannedRow, result: InitResult | Refusal) -> str:
    new = row.new
    if isinstance(result, DBOSQueueDeduplicatedError):
        if row.duplication_policy != "return-existing":
            raise result
        holder = await runtime.sysdb.find_deduplicated(
            new.queue_name or "", new.deduplication_id or ""
        )
        if holder is None:  # the holder left the queue meanwhile: enqueue this one alone
            init = await insert_queued(runtime, new, None, row.duplication_policy)
            if isinstance(init, str):
                return init
            result = init
        else:
            return holder
    check_same_workflow(new.workflow_id, result, new.name, new.class_name, new.config_name)
    check_reuse(new.workflow_id, result, row.extras)
    return new.workflow_id
