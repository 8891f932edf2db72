"""Events: a workflow publishes key/value pairs; anyone may read the latest value.

``set_event`` (from a workflow body or a step) upserts the latest value, keeps a history
row at the step id (what forks copy), and from a body records ``DBOS.setEvent`` — one
fenced statement. ``get_event`` works anywhere; from a workflow body it takes two step ids
(the read, and its durable timeout) and checkpoints what it read, so a replay returns
the same value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._context import current_step, workflow_outside_steps
from .._errors import DBOSException
from ..sysdb.wakeups import event_key
from . import checkpoint
from .durable import caller_for, decode_payload, durable_wake_time, record_payload
from .messages import _encode

if TYPE_CHECKING:
    from .._executor import Executor

SET_EVENT = "DBOS.setEvent"
GET_EVENT = "DBOS.getEvent"


async def set_event(executor: Executor, key: str, value: Any) -> None:
    ctx = workflow_outside_steps()
    step = current_step.get()
    if ctx is not None:
        function_id = ctx.reserve_id()
        executor = ctx.executor
        if checkpoint.replayed(ctx, function_id, SET_EVENT) is not None:
            return
        caller = caller_for(executor, ctx, function_id)
        fmt = ctx.serialization
    elif step is not None:
        executor = step.workflow.executor
        caller = caller_for(executor, step.workflow, step.step_id, record=False)
        fmt = step.workflow.serialization
    else:
        raise DBOSException("set_event() must be called from within a workflow or step")
    encoded = _encode(executor, value, fmt, "event value")
    await executor.sysdb.set_event(caller, key, encoded, fmt, executor.clock.now_ms())


async def get_event(executor: Executor, workflow_id: str, key: str, timeout_seconds: float) -> Any:
    ctx = workflow_outside_steps()
    read_id = ctx.reserve_id() if ctx is not None else None
    deadline_id = ctx.reserve_id() if ctx is not None else None
    if ctx is not None and read_id is not None:
        executor = ctx.executor
        recorded = checkpoint.replayed(ctx, read_id, GET_EVENT)
        if recorded is not None:
            return checkpoint.replay_value(executor, recorded)
    sysdb, clock = executor.sysdb, executor.clock
    started = clock.now_ms()
    with executor.wakeups.subscribe(event_key(workflow_id, key)) as wakeup:
        found = await sysdb.get_event(workflow_id, key)
        if found is None:
            if ctx is not None and deadline_id is not None:
                wake = await durable_wake_time(executor, ctx, deadline_id, timeout_seconds)
            else:
                wake = clock.now() + timeout_seconds
            while found is None and (remaining := wake - clock.now()) > 0:
                await wakeup.wait(min(remaining, sysdb.recheck_interval))
                found = await sysdb.get_event(workflow_id, key)
    if ctx is not None and read_id is not None:
        await record_payload(executor, ctx, read_id, GET_EVENT, found, started_at_ms=started)
    return decode_payload(executor, found)
