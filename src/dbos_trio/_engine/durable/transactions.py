"""Transactions on a datasource: exactly once from a workflow, a plain transaction elsewhere.

From a workflow body a transaction is a step (one step id, reserved at the call; a step row
in ``operation_outputs`` named as the transaction, written as the official SDK writes it),
whose result is *also* written into the datasource's ``datasource_outputs`` inside the
transaction itself. That second copy is what makes it exactly-once:

1. **Replay.** A step row recorded at this id is returned (or raised) without running
   anything. Else, if an earlier execution ran (this one replays), a ``datasource_outputs``
   row at this id means the transaction committed but its step row was never written (a
   crash in between): it is returned, and the step row written now.
2. **Run**, in a transaction at the chosen isolation level: the function, then the
   checkpoint insert (``ON CONFLICT DO NOTHING RETURNING``), then the ownership fence,
   then ``COMMIT`` — the writes and their checkpoint commit together or not at all.
3. **Retry** a lost serialization race (and a lost connection, where the outcome is
   known) with the official SDK's backoff (1 ms × 1.5, capped at 2 s), for as long as it
   takes: it is cancellable, and each attempt is a fresh transaction.
4. **A lost race** — the checkpoint row was taken by another execution of this step —
   rolls this attempt back and replays the winner's row (after checking this execution
   still owns the workflow; a loser that does not stops as any stale execution does).
5. **A failed transaction** (any other exception from the function, its statements or
   ``COMMIT``) is rolled back, and its error recorded as the checkpoint, in a transaction
   of its own, as the official SDK does; then the step row records it, and every replay
   raises it again.
6. **When the workflow ends** with an outcome to record, each datasource it used drops its
   checkpoints (delete, then check ownership, then commit), before the outcome is written:
   from then on the step rows cover every transaction.

Cancellation (a Trio cancel scope, a cancelled workflow, shutdown) rolls the transaction
back on the server — or the connection is discarded — and records nothing anywhere; a
later execution runs it again. A ``COMMIT`` whose reply was lost is retried from a
workflow (the checkpoint row tells whether it committed) but raised elsewhere
(:class:`~dbos_trio._datasource.protocol.TransactionOutcomeUnknown`): nothing can tell.

Outside a workflow, and inside a step, a transaction is a plain transaction (with the
serialization retries); nested durable calls inside a transaction function are plain calls.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

import attrs
import trio

from dbos_trio._datasource.protocol import (
    TRANSACTION_BACKOFF,
    CheckpointTarget,
    DatasourceBackend,
    FailureKind,
    IsolationLevel,
    RecordedOutput,
    StepAlreadyRecorded,
    TransactionConnection,
    TransactionOutcomeUnknown,
)
from dbos_trio._engine.context import (
    StepContext,
    WorkflowContext,
    current_step,
    workflow_outside_steps,
)
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot, encode_error
from dbos_trio._serialization import Codec
from dbos_trio._sysdb.errors import is_control
from dbos_trio.errors import (
    DBOSArgumentTypeError,
    DBOSException,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
)

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio.transactions")

TransactionFunction = Callable[..., Awaitable[Any]]


@attrs.frozen
class TransactionOptions:
    """A registered transaction: its step name and isolation level."""

    name: str
    isolation: IsolationLevel


@attrs.define
class TransactionStats:
    """What a datasource's transactions went through, since it was created."""

    serialization_retries: int = 0  # attempts re-run after a lost serialization race
    connection_retries: int = 0  # attempts re-run after a lost connection
    replayed: int = 0  # results returned from a datasource checkpoint instead of running

    def count(self, kind: FailureKind) -> None:
        if kind == "serialization":
            self.serialization_retries += 1
        else:
            self.connection_retries += 1


def run_transaction(
    executor: Executor,
    ds: DatasourceBackend,
    stats: TransactionStats,
    options: TransactionOptions,
    func: TransactionFunction,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Coroutine[Any, Any, Any] | Any:
    """Call a transaction: reserve its step id now (synchronously), run it when awaited.

    Not a coroutine function, for the reason :func:`~.step.run_step` is not one. From the
    body of a plain ``def`` step (a worker thread) it runs on the Trio thread and returns
    its value.
    """
    if not trio.lowlevel.in_trio_task():
        if workflow_outside_steps() is not None:
            raise DBOSException(
                f"transaction {options.name} was called from a thread of a workflow, outside "
                "any step: call it from the workflow's own tasks"
            )
        return trio.from_thread.run(
            functools.partial(_plain, ds, stats, options, func, args, kwargs)
        )
    slot = checkpoint.reserve(options.name)
    if slot is None:
        return _plain(ds, stats, options, func, args, kwargs)
    return _in_workflow(slot, ds, stats, options, func, args, kwargs)


async def _plain(
    ds: DatasourceBackend,
    stats: TransactionStats,
    options: TransactionOptions,
    func: TransactionFunction,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    async def body(conn: TransactionConnection) -> Any:
        return await func(conn, *args, **kwargs)

    return await _attempts(ds, stats, options.isolation, body, None, None)


async def _in_workflow(
    slot: Slot,
    ds: DatasourceBackend,
    stats: TransactionStats,
    options: TransactionOptions,
    func: TransactionFunction,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    ctx = slot.ctx
    # Noted even on replay, so completion also drops an earlier execution's checkpoints.
    ctx.finishers.setdefault(ds, functools.partial(_drop_checkpoints, ds, ctx))
    codec = slot.executor.codec
    what = f"transaction {options.name}"
    step_id = slot.function_id
    fmt = codec.default_format

    def encode(value: Any) -> tuple[str, str]:
        try:
            return codec.encode(value, fmt), fmt
        except Exception as unserializable:
            raise DBOSArgumentTypeError(
                f"cannot serialize the result of {what} as {fmt}: {unserializable}"
            ) from unserializable

    fence = functools.partial(slot.executor.sysdb.check_owner, ctx.workflow_id, ctx.owner_xid)
    target = CheckpointTarget(ctx.workflow_id, step_id, encode, fence)

    async def body(conn: TransactionConnection) -> Any:
        token = current_step.set(StepContext(ctx, step_id))  # durable calls in it are plain
        try:
            return await func(conn, *args, **kwargs)
        finally:
            current_step.reset(token)

    async def operation() -> Any:
        if ctx.recorded is not None:  # an earlier execution ran: it may have committed
            found = await _recorded(ds, stats, target)
            if found is not None:
                stats.replayed += 1
                return _replay(codec, found, what)
        try:
            return await _attempts(ds, stats, options.isolation, body, target, codec)
        except StepAlreadyRecorded:
            pass  # handled below, so the internal signal stays out of the traceback
        await fence()  # another execution owns the workflow now: stop, as its loser does
        found = await _recorded(ds, stats, target)
        if found is None:
            raise DBOSException(
                f"{what} (step {step_id} of workflow {ctx.workflow_id}) lost a race with "
                "another execution, but no recorded result was found"
            )
        stats.replayed += 1
        return _replay(codec, found, what)

    return await checkpoint.checkpointed(slot, operation, what=what)


def _replay(codec: Codec, found: RecordedOutput, what: str) -> Any:
    where = f"the datasource checkpoint of {what}"
    if found.error:
        raise codec.decode_error(found.error, found.serialization, where)
    if found.output is None:
        raise DBOSException(f"{where} holds neither an output nor an error")
    return codec.decode(found.output, found.serialization, where)


async def _attempts(
    ds: DatasourceBackend,
    stats: TransactionStats,
    isolation: IsolationLevel,
    body: Callable[[TransactionConnection], Awaitable[Any]],
    target: CheckpointTarget | None,
    codec: Codec | None,
) -> Any:
    """Run attempts until one commits (or fails for good, its error recorded)."""
    retry = 0
    while True:
        try:
            return await ds.run(isolation, body, target)
        except StepAlreadyRecorded:
            raise
        except Exception as error:
            if is_control(error):
                raise  # shutdown, the system database's fence failing: nothing recorded
            kind = ds.failure_kind(error)
            # Without a checkpoint row nothing can tell whether a lost COMMIT committed.
            unknowable = target is None and isinstance(error, TransactionOutcomeUnknown)
            if kind is not None and not unknowable:
                stats.count(kind)
                await trio.sleep(TRANSACTION_BACKOFF.delay(retry))
                retry += 1
                continue
            if target is not None and codec is not None:
                await _record_failure(ds, stats, target, codec, error)
            raise


async def _until_done(
    ds: DatasourceBackend, stats: TransactionStats, operation: Callable[[], Awaitable[Any]]
) -> Any:
    """``operation`` (idempotent), retried after a transient datasource failure."""
    retry = 0
    while True:
        try:
            return await operation()
        except Exception as error:
            kind = ds.failure_kind(error)
            if kind is None or is_control(error):
                raise
            stats.count(kind)
            await trio.sleep(TRANSACTION_BACKOFF.delay(retry))
            retry += 1


async def _recorded(
    ds: DatasourceBackend, stats: TransactionStats, target: CheckpointTarget
) -> RecordedOutput | None:
    found: RecordedOutput | None = await _until_done(
        ds, stats, functools.partial(ds.recorded, target.workflow_id, target.step_id)
    )
    return found


async def _record_failure(
    ds: DatasourceBackend,
    stats: TransactionStats,
    target: CheckpointTarget,
    codec: Codec,
    error: Exception,
) -> None:
    fmt = codec.default_format
    encoded = encode_error(codec, error, fmt)
    await _until_done(ds, stats, functools.partial(ds.record_error, target, encoded, fmt))


async def _drop_checkpoints(ds: DatasourceBackend, ctx: WorkflowContext) -> None:
    """Best effort: a leftover checkpoint is never read again, so a failure only warns."""
    fence = functools.partial(ctx.executor.sysdb.check_owner, ctx.workflow_id, ctx.owner_xid)
    try:
        await ds.delete_checkpoints(ctx.workflow_id, fence=fence)
    except (DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError):
        # Another execution owns it now (or nobody: cancelled); its checkpoints are its own.
        logger.debug("workflow %s: not dropping datasource checkpoints (not ours)", ctx.workflow_id)
    except Exception as error:
        logger.warning(
            "could not drop the checkpoints of workflow %s in the %s: %s",
            ctx.workflow_id,
            ds.description,
            error,
        )
