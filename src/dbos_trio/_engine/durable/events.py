"""Events: a workflow publishes key/value pairs; anyone may read the latest value.

``set_event`` (from a workflow body or a step) upserts the latest value, keeps a history
row at the step id (what forks copy), and from a body records ``DBOS.setEvent`` — one
fenced statement. ``get_event`` works anywhere; from a workflow body it takes two step ids
(the read, and its durable timeout) and checkpoints what it read, so a replay returns
the same value. Step ids are taken at the call (these are plain functions returning a
coroutine), so concurrent calls from one body are numbered in call order.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from dbos_trio._core import validate
from dbos_trio._engine.context import WorkflowContext, current_step
from dbos_trio._engine.durable.messages import stored_payload
from dbos_trio._engine.durable.sleep import SLEEP, check_seconds, durable_wake_time
from dbos_trio._engine.durable.waits import wait_for_event
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot, caller_for, decoded_payload, record_payload
from dbos_trio._sysdb.records import Caller
from dbos_trio.errors import DBOSException

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

SET_EVENT = "DBOS.setEvent"
GET_EVENT = "DBOS.getEvent"


def writer_slot(
    name: str, operation: str
) -> tuple[Slot | None, WorkflowContext, Callable[[], Caller]]:
    """For a write from a workflow body (recorded at a new step id) or from a step (at the
    step's own id, fenced but not recorded): the slot, the workflow, and how to make the
    caller once the slot is placed (the write's coroutine asks, after its turn came).

    Raises :class:`DBOSException` naming ``operation`` outside both."""
    slot = checkpoint.reserve(name)
    if slot is not None:
        return slot, slot.ctx, slot.caller
    step = current_step.get()
    if step is None:
        raise DBOSException(f"{operation} must be called from within a workflow or step")
    inside = caller_for(step.workflow, step.step_id, record=False)
    return None, step.workflow, lambda: inside


def set_event(key: str, value: Any, fmt: str | None = None) -> Coroutine[Any, Any, None]:
    """Publish ``key = value`` (stored in ``fmt``, default the workflow's format); from a
    body the ``DBOS.setEvent`` step id is taken now."""
    validate.text(key, "key")
    slot, ctx, caller = writer_slot(SET_EVENT, "set_event()")
    chosen = fmt

    async def publish() -> None:
        executor = ctx.executor
        fmt = chosen or ctx.serialization
        encoded = await stored_payload(executor, value, fmt, f"value of event {key!r}")
        await executor.sysdb.set_event(caller(), key, encoded, fmt, executor.clock.now_ms())

    return checkpoint.checkpointed(slot, publish, records_itself=True, record_errors=False)


def get_event(
    executor: Executor, workflow_id: str, key: str, timeout_seconds: float
) -> Coroutine[Any, Any, Any]:
    """Read an event, waiting up to the timeout; from a body both step ids are taken now."""
    validate.text(workflow_id, "workflow_id")
    validate.text(key, "key")
    check_seconds(timeout_seconds, "get_event: timeout_seconds")
    slot = checkpoint.reserve(GET_EVENT, ids=2)
    return _get_event(executor, slot, workflow_id, key, timeout_seconds)


async def _get_event(
    executor: Executor, slot: Slot | None, workflow_id: str, key: str, timeout_seconds: float
) -> Any:
    if slot is None:

        async def plain_deadline() -> float:
            return executor.clock.now() + timeout_seconds

        return await decoded_payload(
            executor, await wait_for_event(executor, workflow_id, key, plain_deadline)
        )
    await slot.placed()
    recorded = slot.recorded()
    if recorded is not None:
        return await checkpoint.replayed_value(executor, recorded)

    async def durable_deadline() -> float:
        return await durable_wake_time(slot.following(SLEEP), timeout_seconds, projected=False)

    started = executor.clock.now_ms()
    with checkpoint.control_latch(slot.ctx):
        found = await wait_for_event(executor, workflow_id, key, durable_deadline)
        await record_payload(slot, found, started_at_ms=started)
    return await decoded_payload(executor, found)
