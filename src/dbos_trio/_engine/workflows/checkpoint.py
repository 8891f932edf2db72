"""Where a durable call sits in its workflow, and the one way every durable call is made.

A durable call made from a workflow body — a step, a send, a sleep, a management call,
a child's start — goes through the same four moves:

1. **Reserve** its step id at the call (:func:`reserve`), before any ``await``: from the
   workflow body the id is given at once, so calls started together are numbered in call
   order whatever order Trio runs them in; from a task of a durable nursery the call
   takes its place in the nursery's turn order (:mod:`.turns`) and the id is given when
   its turn comes (:meth:`Slot.placed`). The result is a :class:`Slot`; outside a workflow
   body (or inside a step, where durable calls are plain calls) there is none.
2. **Replay** what an earlier execution recorded at that id, if anything (from the map
   loaded once when the execution started, never a query per call); a different name
   recorded there means the code changed under a running workflow:
   :class:`DBOSUnexpectedStepError`.
3. **Run** the operation, and **record** exactly one checkpoint: its value or its error
   (:func:`checkpointed`), or — for writes that commit their checkpoint atomically with
   themselves (``send``, ``set_event``, streams, ``recv``) — let the operation record it.
4. **Latch control**: a system-database failure seen on the way marks the execution
   (``control_failure``), so its outcome is never written even if user code swallowed
   the error; the row stays PENDING and recovery re-runs it from its last checkpoint.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from dbos_trio._core.portable_types import UNTYPED
from dbos_trio._engine.context import WorkflowContext, workflow_outside_steps
from dbos_trio._engine.workflows import placement
from dbos_trio._engine.workflows.placement import current_turns
from dbos_trio._engine.workflows.turns import Ticket
from dbos_trio._serialization import PORTABLE_JSON, Codec
from dbos_trio._sysdb.errors import is_control
from dbos_trio._sysdb.records import Caller, RecordedStep
from dbos_trio.errors import (
    DBOSArgumentTypeError,
    DBOSUnexpectedStepError,
    DBOSValueTooLargeError,
)

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

T = TypeVar("T")


@attrs.frozen
class Slot:
    """A durable call's reserved place: its workflow execution, name and step id.

    The id is given at the call in the workflow body; in a task of a durable nursery, once
    the call's turn comes (:mod:`.turns`) — every durable call awaits :meth:`placed` before
    it reads :attr:`function_id`, which costs nothing when the id is already there.
    """

    ctx: WorkflowContext
    name: str
    ticket: Ticket
    offset: int = 0

    @property
    def executor(self) -> Executor:
        return self.ctx.executor

    @property
    def function_id(self) -> int:
        first = self.ticket.first_id
        if first is None:
            raise AssertionError(f"{self.name}: read its step id before it was placed")
        return first + self.offset

    async def placed(self) -> Slot:
        """This slot, once its step id is given (at once, unless it waits for its turn)."""
        if not self.ticket.is_placed:
            turns = current_turns(self.ctx)
            await self.ticket.wait_placed(turns.holder if turns is not None else _nobody)
        return self

    def recorded(self) -> RecordedStep | None:
        """The checkpoint an earlier execution recorded here, if any."""
        return replayed(self.ctx, self.function_id, self.name)

    def caller(self, *, record: bool = True) -> Caller:
        """This slot as the caller of a write that records its own checkpoint."""
        return caller_for(self.ctx, self.function_id, record=record)

    def following(self, name: str) -> Slot:
        """The slot at the next step id (reserved together with this one)."""
        return Slot(self.ctx, name, self.ticket, self.offset + 1)


def _nobody() -> str:
    return "nobody"


def reserve(name: str, *, ids: int = 1) -> Slot | None:
    """Reserve ``ids`` consecutive step ids of the running workflow body for a call named
    ``name`` (the first is the returned slot's); None outside a workflow body."""
    ctx = workflow_outside_steps()
    if ctx is None:
        return None
    return reserve_in(ctx, name, ids=ids)


def reserve_in(ctx: WorkflowContext, name: str, *, ids: int = 1) -> Slot:
    """Reserve the next ``ids`` step ids of ``ctx`` for a call named ``name``."""
    ticket = Ticket(name, ids)
    placement.submit(ctx, ticket)
    return Slot(ctx, name, ticket)


def replayed(ctx: WorkflowContext, function_id: int, name: str) -> RecordedStep | None:
    """The checkpoint an earlier execution recorded at ``function_id``, if any."""
    recorded = ctx.recorded_at(function_id, name)
    if recorded is not None and recorded.function_name != name:
        raise DBOSUnexpectedStepError(ctx.workflow_id, function_id, name, recorded.function_name)
    return recorded


async def replayed_value(executor: Executor, recorded: RecordedStep, hint: Any = UNTYPED) -> Any:
    """:func:`replay_value`, a payload store entry it references read first in a worker
    thread (:meth:`~dbos_trio._serialization.Codec.prefetch`), off the Trio thread.
    Cancellation abandons that read; nothing is changed either way."""
    await executor.codec.prefetch(recorded.output)
    return replay_value(executor, recorded, hint)


def replay_value(executor: Executor, recorded: RecordedStep, hint: Any = UNTYPED) -> Any:
    """The recorded output (portable JSON read back as ``hint``, the step's annotated
    return type), or raise the recorded error."""
    what = f"the checkpoint of step {recorded.function_id} ({recorded.function_name})"
    if recorded.error is not None:
        raise executor.codec.decode_error(recorded.error, recorded.serialization, what)
    return executor.codec.decode(recorded.output, recorded.serialization, what, hint)


class control_latch:  # named as the function it replaced: ``with control_latch(ctx):``
    """Mark ``ctx``'s execution when a control database error passes through.

    A slotted class, not a generator context manager: it is held for the whole of every
    long wait (``recv``, ``sleep``), so its size is paid per waiting workflow."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: WorkflowContext) -> None:
        self._ctx = ctx

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, failure: BaseException | None, tb: object) -> None:
        if isinstance(failure, Exception) and is_control(failure):
            self._ctx.control_failure = failure


def caller_for(ctx: WorkflowContext, function_id: int, *, record: bool = True) -> Caller:
    executor = ctx.executor
    return Caller(
        workflow_id=ctx.workflow_id,
        owner_xid=ctx.owner_xid,
        function_id=function_id,
        started_at_ms=executor.clock.now_ms(),
        application_name=executor.app_name,
        record=record,
    )


async def checkpointed(
    slot: Slot | None,
    operation: Callable[[], Awaitable[T]],
    *,
    records_itself: bool = False,
    record_errors: bool | tuple[type[Exception], ...] = True,
    what: str | None = None,
    hint: Any = UNTYPED,
) -> T:
    """Replay ``slot``'s checkpoint, or run ``operation`` and record what it gave.

    Without a slot (outside a workflow body) this is just ``await operation()``. An
    exception from the operation is recorded as the checkpoint's error (``record_errors``:
    every one, none, or those of the given types) and re-raised; its value is recorded as
    the output, unless the operation ``records_itself`` (it commits its checkpoint with its
    own write). A value the application's serializer cannot store is recorded (and
    raised) as a :class:`DBOSArgumentTypeError` (a ``TypeError``, as in dbos 3.4) naming
    ``what`` (default: the call's name), one over the size limit as
    :class:`DBOSValueTooLargeError`; a replayed portable output is read back as
    ``hint`` (the step's return annotation). System-database
    failures are control: latched, never recorded. Cancellation records nothing; a later
    execution runs the call again.
    """
    if slot is None:
        return await operation()
    tracing = slot.executor.tracing
    if tracing is None:
        return await _checkpointed(slot, operation, records_itself, record_errors, what, hint)
    with tracing.operation_span(slot.name, slot.ctx.workflow_id):
        return await _checkpointed(slot, operation, records_itself, record_errors, what, hint)


async def _checkpointed(
    slot: Slot,
    operation: Callable[[], Awaitable[T]],
    records_itself: bool,
    record_errors: bool | tuple[type[Exception], ...],
    what: str | None,
    hint: Any,
) -> T:
    await slot.placed()
    recorded = slot.recorded()
    executor = slot.executor
    if recorded is not None:
        replayed: T = await replayed_value(executor, recorded, hint)
        return replayed
    codec = executor.codec
    fmt = codec.default_format
    started = executor.clock.now_ms()
    output: str | None = None
    with control_latch(slot.ctx):
        try:
            value = await operation()
            if not records_itself:
                # The store's put, if the output goes there, runs in a worker thread.
                output = await codec.settle(
                    _encoded(codec, value, fmt, what or slot.name, slot.ctx.workflow_id)
                )
        except Exception as error:
            if is_control(error):
                raise
            if record_errors is True or (
                record_errors is not False and isinstance(error, record_errors)
            ):
                await record_error(slot, error, started_at_ms=started)
            raise
        if not records_itself:
            await record(slot, started_at_ms=started, output=output, serialization=fmt)
    return value


def _encoded(codec: Codec, value: Any, fmt: str, what: str, workflow_id: str = "") -> str:
    try:
        return codec.encode(
            value, fmt, f"the output of {what} in workflow {workflow_id}", defer=True
        )
    except DBOSValueTooLargeError:
        raise  # names the value, its size and the limit already
    except Exception as unserializable:
        raise DBOSArgumentTypeError(
            f"cannot serialize the result of {what} as {fmt}: {unserializable}"
        ) from unserializable


async def record(
    slot: Slot,
    *,
    started_at_ms: int,
    output: str | None = None,
    error: str | None = None,
    serialization: str | None = None,
    child_workflow_id: str | None = None,
    completed_at_ms: int | None = None,
) -> None:
    """Record one checkpoint at ``slot`` (one statement, ownership-fenced). A deferred
    payload store reference in ``output`` is settled first (its entry put in a worker
    thread, before the row: see :meth:`~dbos_trio._serialization.Codec.settle`)."""
    await slot.placed()
    ctx, executor = slot.ctx, slot.executor
    output = await executor.codec.settle(output)
    step = RecordedStep(
        function_id=slot.function_id,
        function_name=slot.name,
        output=output,
        error=error,
        serialization=serialization,
        child_workflow_id=child_workflow_id,
        started_at_ms=started_at_ms,
        completed_at_ms=executor.clock.now_ms() if completed_at_ms is None else completed_at_ms,
    )
    with control_latch(ctx):
        await executor.sysdb.record_step(
            ctx.owner_xid, step, workflow_id=ctx.workflow_id, application_name=executor.app_name
        )


async def record_value(slot: Slot, value: Any, *, started_at_ms: int) -> None:
    """Record ``value`` as the checkpoint's output, in the application's format."""
    codec = slot.executor.codec
    fmt = codec.default_format
    what = f"the output of {slot.name} in workflow {slot.ctx.workflow_id}"
    await record(
        slot,
        started_at_ms=started_at_ms,
        output=codec.encode(value, fmt, what, defer=True),
        serialization=fmt,
    )


def encode_error(codec: Codec, error: BaseException, fmt: str) -> str:
    """``error`` in format ``fmt``, degrading rather than failing.

    A serializer that cannot store the exception (a custom JSON one, say) still gets the
    error recorded: as ``Exception("<Type>: <message>")`` (the codec's own fallback), and
    failing that as the plain string ``"<Type>: <message>"``, which readers turn back into
    an ``Exception``. An error that cannot be recorded would leave its workflow PENDING
    forever, failing again at every recovery.
    """
    try:
        return codec.encode_error(error, fmt)
    except Exception:
        return codec.encode(f"{type(error).__name__}: {error}", fmt)


async def record_error(slot: Slot, error: BaseException, *, started_at_ms: int) -> None:
    """Record ``error`` as the checkpoint's error (replays raise it again)."""
    codec = slot.executor.codec
    fmt = codec.default_format
    try:
        encoded = encode_error(codec, error, fmt)
    except Exception:
        # Not even a string: fall back to the portable envelope (this row names its format).
        fmt = PORTABLE_JSON
        encoded = codec.encode_error(error, fmt)
    await record(slot, started_at_ms=started_at_ms, error=encoded, serialization=fmt)


async def record_payload(
    slot: Slot, found: tuple[str, str | None] | None, *, started_at_ms: int
) -> None:
    """Checkpoint a read payload verbatim, in its own format.

    Nothing found (a timeout) is recorded as an encoded None in the application's format,
    never as a NULL output: dbos 3.4 refuses to replay a ``DBOS.recv``/``DBOS.getEvent``
    checkpoint without an output ("No output recorded"), and another SDK may replay ours.
    """
    if found is None:
        codec = slot.executor.codec
        fmt = codec.default_format
        found = (codec.encode(None, fmt), fmt)
    await record(slot, started_at_ms=started_at_ms, output=found[0], serialization=found[1])


def decode_payload(executor: Executor, found: tuple[str, str | None] | None) -> Any:
    return None if found is None else executor.codec.decode(found[0], found[1])


async def decoded_payload(executor: Executor, found: tuple[str, str | None] | None) -> Any:
    """:func:`decode_payload`, a payload store entry read first in a worker thread."""
    if found is not None:
        await executor.codec.prefetch(found[0])
    return decode_payload(executor, found)


def as_step(name: str, operation: Callable[[], Awaitable[T]]) -> Coroutine[Any, Any, T]:
    """Run a management operation; from a workflow body, checkpoint its answer as ``name``.

    Not async: the step id is reserved at the call, so concurrent management calls from
    one body are numbered in call order and a replay hands each its own answer.
    """
    return checkpointed(reserve(name), operation)
