"""Streams: a workflow appends values under a key; readers consume them in order.

Offsets start at 0 and have no gaps; closing appends the portable-JSON sentinel
``"__DBOS_STREAM_CLOSED__"``. A writer in a workflow body records ``DBOS.writeStream`` /
``DBOS.closeStream`` in the same fenced statement as the append; from a step the append
is fenced but not recorded.

A reader stops at the sentinel, or once the writer is no longer active and every value
is read (the writer's status comes back with each batch, in the same snapshot, so nothing
written before it finished is missed). Reading a missing workflow's stream raises
:class:`DBOSNonExistentWorkflowError`. Read from a workflow body, each delivered value —
and the end — is a ``DBOS.readStream`` checkpoint, so a replay yields the same values.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any

from .._context import WorkflowContext, current_step, workflow_outside_steps
from .._errors import DBOSException, DBOSNonExistentWorkflowError
from .._serialization import PORTABLE_JSON
from ..sysdb.records import ACTIVE_STATUSES, STREAM_CLOSED
from ..sysdb.wakeups import stream_key
from . import checkpoint
from .durable import caller_for, record_payload
from .messages import _encode

if TYPE_CHECKING:
    from .._executor import Executor

WRITE_STREAM = "DBOS.writeStream"
CLOSE_STREAM = "DBOS.closeStream"
READ_STREAM = "DBOS.readStream"
BATCH_SIZE = 100
# Writer termination has no notification: a reader re-checks at least this often.
TERMINATION_RECHECK_SECONDS = 1.0
CLOSED_MARKER = json.dumps(STREAM_CLOSED)


def _append(
    executor: Executor, key: str, value: Any, *, step_name: str, closing: bool
) -> Coroutine[Any, Any, None]:
    ctx = workflow_outside_steps()
    step = current_step.get()
    if ctx is not None:
        return _write(ctx.executor, ctx, ctx.reserve_id(), key, value, step_name, closing)
    if step is not None:
        return _write(step.workflow.executor, None, step.step_id, key, value, step_name, closing)
    raise DBOSException(f"{step_name} must be called from within a workflow or step")


async def _write(
    executor: Executor,
    ctx: WorkflowContext | None,
    function_id: int,
    key: str,
    value: Any,
    step_name: str,
    closing: bool,
) -> None:
    if ctx is not None:
        if checkpoint.replayed(ctx, function_id, step_name) is not None:
            return
        caller = caller_for(executor, ctx, function_id)
    else:
        step = current_step.get()
        assert step is not None
        ctx = step.workflow
        caller = caller_for(executor, ctx, function_id, record=False)
    fmt = ctx.serialization
    if closing:
        encoded, fmt = CLOSED_MARKER, PORTABLE_JSON
    else:
        encoded = _encode(executor, value, fmt, "stream value")
    await executor.sysdb.write_stream(
        caller, key, encoded, fmt, executor.clock.now_ms(), step_name=step_name
    )


def write_stream(executor: Executor, key: str, value: Any) -> Coroutine[Any, Any, None]:
    """Append ``value``; from a body the ``DBOS.writeStream`` step id is taken now."""
    return _append(executor, key, value, step_name=WRITE_STREAM, closing=False)


def close_stream(executor: Executor, key: str) -> Coroutine[Any, Any, None]:
    """Append the close marker; from a body the ``DBOS.closeStream`` step id is taken now."""
    return _append(executor, key, None, step_name=CLOSE_STREAM, closing=True)


def _is_end(value: str | None, fmt: str | None) -> bool:
    return fmt == PORTABLE_JSON and value == CLOSED_MARKER


async def read_stream(
    executor: Executor, workflow_id: str, key: str, offset: int = 0
) -> AsyncIterator[Any]:
    """Yield the stream's values in order until it is closed, or drained after its writer ended."""
    ctx = workflow_outside_steps()
    if ctx is not None:
        executor = ctx.executor
    sysdb, codec = executor.sysdb, executor.codec
    buffered: list[tuple[str, str | None]] = []
    with executor.wakeups.subscribe(stream_key(workflow_id, key)) as wakeup:
        while True:
            function_id = ctx.reserve_id() if ctx is not None else None
            if ctx is not None and function_id is not None:
                recorded = checkpoint.replayed(ctx, function_id, READ_STREAM)
                if recorded is not None:
                    if _is_end(recorded.output, recorded.serialization):
                        return
                    offset += 1
                    yield checkpoint.replay_value(executor, recorded)
                    continue
            started = executor.clock.now_ms()
            while not buffered:
                batch = await sysdb.read_stream(workflow_id, key, offset, BATCH_SIZE)
                if batch.writer_status is None:
                    raise DBOSNonExistentWorkflowError("target", workflow_id)
                buffered = [(value, fmt) for _, value, fmt in batch.values]
                if not buffered and batch.writer_status not in ACTIVE_STATUSES:
                    buffered = [(CLOSED_MARKER, PORTABLE_JSON)]  # drained after the writer ended
                if not buffered:
                    await wakeup.wait(min(sysdb.recheck_interval, TERMINATION_RECHECK_SECONDS))
            value, fmt = buffered.pop(0)
            if ctx is not None and function_id is not None:
                await record_payload(
                    executor, ctx, function_id, READ_STREAM, (value, fmt), started_at_ms=started
                )
            if _is_end(value, fmt):
                return
            offset += 1
            yield codec.decode(value, fmt)
