"""Where a durable call sits, and the check-then-record helpers every durable call shares.

A durable call made from a workflow body reserves its step id synchronously (before any
``await``), looks for a checkpoint recorded by an earlier execution at that id (from the
map loaded once when the execution started, never a query per step), and otherwise does
its work and records exactly one checkpoint. A different name recorded at that id means
the code changed under a running workflow: :class:`DBOSUnexpectedStepError`.

Any system-database failure while recording marks the execution (``control_failure``), so
its outcome is never written even if user code catches the error: the row stays PENDING
and recovery re-runs it from its last checkpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._context import WorkflowContext
from .._errors import DBOSUnexpectedStepError, SystemDatabaseError
from .._serialization import PORTABLE_JSON, Codec
from ..sysdb.records import RecordedStep

if TYPE_CHECKING:
    from .._executor import Executor


def replayed(ctx: WorkflowContext, function_id: int, name: str) -> RecordedStep | None:
    """The checkpoint an earlier execution recorded at ``function_id``, if any."""
    recorded = ctx.recorded_at(function_id)
    if recorded is not None and recorded.function_name != name:
        raise DBOSUnexpectedStepError(ctx.workflow_id, function_id, name, recorded.function_name)
    return recorded


def replay_value(executor: Executor, recorded: RecordedStep) -> Any:
    """The recorded output, or raise the recorded error."""
    if recorded.error is not None:
        raise executor.codec.decode_error(recorded.error, recorded.serialization)
    return executor.codec.decode(recorded.output, recorded.serialization)


async def record(
    executor: Executor,
    ctx: WorkflowContext,
    function_id: int,
    name: str,
    *,
    started_at_ms: int,
    output: str | None = None,
    error: str | None = None,
    serialization: str | None = None,
    child_workflow_id: str | None = None,
    completed_at_ms: int | None = None,
) -> None:
    """Record one checkpoint for ``ctx``'s execution (one statement, ownership-fenced)."""
    step = RecordedStep(
        function_id=function_id,
        function_name=name,
        output=output,
        error=error,
        serialization=serialization,
        child_workflow_id=child_workflow_id,
        started_at_ms=started_at_ms,
        completed_at_ms=executor.clock.now_ms() if completed_at_ms is None else completed_at_ms,
    )
    try:
        await executor.sysdb.record_step(
            ctx.owner_xid, step, workflow_id=ctx.workflow_id, application_name=executor.app_name
        )
    except SystemDatabaseError as failure:
        ctx.control_failure = failure
        raise


async def record_value(
    executor: Executor,
    ctx: WorkflowContext,
    function_id: int,
    name: str,
    value: Any,
    *,
    started_at_ms: int,
) -> None:
    """Record ``value`` as the checkpoint's output, in the application's format."""
    fmt = executor.codec.default_format
    await record(
        executor,
        ctx,
        function_id,
        name,
        started_at_ms=started_at_ms,
        output=executor.codec.encode(value, fmt),
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


async def record_error(
    executor: Executor,
    ctx: WorkflowContext,
    function_id: int,
    name: str,
    error: BaseException,
    *,
    started_at_ms: int,
) -> None:
    fmt = executor.codec.default_format
    try:
        encoded = encode_error(executor.codec, error, fmt)
    except Exception:
        # Not even a string: fall back to the portable envelope (this row names its format).
        fmt = PORTABLE_JSON
        encoded = executor.codec.encode_error(error, fmt)
    await record(
        executor,
        ctx,
        function_id,
        name,
        started_at_ms=started_at_ms,
        error=encoded,
        serialization=fmt,
    )
