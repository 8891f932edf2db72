"""Events: a workflow publishes key/value pairs; anyone may read the latest value.

``set_event`` (from a workflow body or a step) upserts the latest value, keeps a history
row at the step id (what forks copy), and from a body records ``DBOS.setEvent`` — one
fenced statement. ``get_event`` works anywhere; from a workflow body it takes two step ids
(the read, and its durable timeout) and checkpoints what it read, so a replay returns
the same value. Step ids are taken at the call (these are plain functions returning a
coroutine), so concurrent calls from one body are numbered in call order.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from .._context import WorkflowContext, current_step, workflow_outside_steps
from .._errors import DBOSException
from ..sysdb.wakeups import event_key
from . import checkpoint
from .durable import (
    caller_for,
    check_seconds,
    decode_payload,
    durable_wake_time,
    record_payload,
)
from .messages import _encode

if TYPE_CHECKING:
    from .._executor import Executor

SET_EVENT = "DBOS.setEvent"
GET_EVENT = "DBOS.getEvent"


def set_event(executor: Executor, key: str, value: Any) -> Coroutine[Any, Any, None]:
    """Publish ``key = value``; from a body the ``DBOS.setEvent`` step id is taken now."""
    ctx = workflow_outside_steps()
    step = current_step.get()
    if ctx is not None:
        return _set_event(ctx.executor, ctx, ctx.reserve_id(), key, value)
    if step is not None:
        return _set_event(step.workflow.executor, None, step.step_id, key, value)
    raise DBOSException("set_event() must be called from within a workflow or step")


async def _set_event(
    executor: Executor, ctx: WorkflowContext | None, function_id: int, key: str, value: Any
) -> None:
    if ctx is not None:
        if checkpoint.replayed(ctx, function_id, SET_EVENT) is not None:
            return
        caller = caller_for(executor, ctx, function_id)
    else:
        step = current_step.get()
        assert step is not None
        ctx = step.workflow
        caller = caller_for(executor, ctx, function_id, record=False)
    fmt = ctx.serialization
    encoded = _encode(executor, value, fmt, "event value")
    await executor.sysdb.set_event(caller, key, encoded, fmt, executor.clock.now_ms())


def get_event(
    executor: Executor, workflow_id: str, key: str, timeout_seconds: float
) -> Coroutine[Any, Any, Any]:
    """Read an event, waiting up to the timeout; from a body both step ids are taken now."""
    check_seconds(timeout_seconds, "get_event")
    ctx = workflow_outside_steps()
    if ctx is None:
        return _get_event(executor, None, 0, 0, workflow_id, key, timeout_seconds)
    read_id = ctx.reserve_id()
    deadline_id = ctx.reserve_id()
    return _get_event(ctx.executor, ctx, read_id, deadline_id, workflow_id, key, timeout_seconds)


async def _get_event(
    executor: Executor,
    ctx: WorkflowContext | None,
    read_id: int,
    deadline_id: int,
    workflow_id: str,
    key: str,
    timeout_seconds: float,
) -> Any:
    if ctx is not None:
        recorded = checkpoint.replayed(ctx, read_id, GET_EVENT)
        if recorded is not None:
            return checkpoint.replay_value(executor, recorded)
    sysdb, clock = executor.sysdb, executor.clock
    started = clock.now_ms()
    with executor.wakeups.subscribe(event_key(workflow_id, key)) as wakeup:
        found = await sysdb.get_event(workflow_id, key)
        if found is None:
            if ctx is not None:
                wake = await durable_wake_time(executor, ctx, deadline_id, timeout_seconds)
            else:
                wake = clock.now() + timeout_seconds
            while found is None and (remaining := wake - clock.now()) > 0:
                await wakeup.wait(min(remaining, sysdb.recheck_interval))
                found = await sysdb.get_event(workflow_id, key)
    if ctx is not None:
        await record_payload(executor, ctx, read_id, GET_EVENT, found, started_at_ms=started)
    return decode_payload(executor, found)
