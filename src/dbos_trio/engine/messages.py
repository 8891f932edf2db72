"""``send`` and ``recv``: durable messages between workflows.

Invariants, and why:

* A send from a workflow commits the message and its ``DBOS.send`` checkpoint together,
  so a replay never sends twice; an idempotency key makes the message id
  ``"{key}::{destination}"``, so any number of retried sends leave one message.
* Step ids are taken at the call (these are plain functions returning a coroutine), so
  concurrent calls from one body are numbered in call order, not in Trio's run order.
* ``recv`` is for workflow bodies only and takes two step ids, reserved at the call: the
  receive at N and its timeout, a durable ``DBOS.sleep`` at N+1, so a recovered receive
  keeps its original deadline. Consuming marks the oldest unconsumed message on the topic
  (FIFO) consumed — never deletes it — in the same transaction that records the
  ``DBOS.recv`` checkpoint, so a replay returns the recorded message and never consumes a
  second one.
* One receiver per (workflow, topic) per process: a second concurrent ``recv`` on the same
  topic is refused rather than left to race.
"""

from __future__ import annotations

import uuid
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from .._context import WorkflowContext, current_step, workflow_outside_steps
from .._errors import DBOSException, DBOSNonExistentWorkflowError
from ..sysdb.records import NULL_TOPIC
from ..sysdb.wakeups import message_key
from . import checkpoint
from .durable import (
    caller_for,
    check_seconds,
    decode_payload,
    durable_wake_time,
    record_payload,
)

if TYPE_CHECKING:
    from .._executor import Executor

SEND = "DBOS.send"
RECV = "DBOS.recv"


def _encode(executor: Executor, value: Any, fmt: str, what: str) -> str:
    try:
        return executor.codec.encode(value, fmt)
    except Exception as error:
        raise DBOSException(f"cannot serialize the {what} as {fmt}: {error}") from error


def send(
    executor: Executor,
    destination_id: str,
    message: Any,
    topic: str | None,
    idempotency_key: str | None,
) -> Coroutine[Any, Any, None]:
    """Send ``message``; from a workflow body the ``DBOS.send`` step id is taken now."""
    ctx = workflow_outside_steps()
    if ctx is None:
        return _send(executor, None, None, destination_id, message, topic, idempotency_key)
    return _send(
        ctx.executor, ctx, ctx.reserve_id(), destination_id, message, topic, idempotency_key
    )


async def _send(
    executor: Executor,
    ctx: WorkflowContext | None,
    function_id: int | None,
    destination_id: str,
    message: Any,
    topic: str | None,
    idempotency_key: str | None,
) -> None:
    if ctx is not None and function_id is not None:
        recorded = checkpoint.replayed(ctx, function_id, SEND)
        if recorded is not None:
            checkpoint.replay_value(executor, recorded)
            return
    step = current_step.get()
    owning = ctx or (step.workflow if step is not None else None)
    fmt = owning.serialization if owning is not None else executor.codec.default_format
    topic_value = NULL_TOPIC if topic is None else topic
    message_uuid = (
        f"{idempotency_key}::{destination_id}" if idempotency_key is not None else str(uuid.uuid4())
    )
    encoded = _encode(executor, message, fmt, "message")
    if ctx is None or function_id is None:
        await executor.sysdb.send(
            destination_id=destination_id,
            topic=topic_value,
            message=encoded,
            serialization=fmt,
            message_uuid=message_uuid,
            now_ms=executor.clock.now_ms(),
            caller=None,
        )
        return
    caller = caller_for(executor, ctx, function_id)
    try:
        await executor.sysdb.send(
            destination_id=destination_id,
            topic=topic_value,
            message=encoded,
            serialization=fmt,
            message_uuid=message_uuid,
            now_ms=executor.clock.now_ms(),
            caller=caller,
        )
    except DBOSNonExistentWorkflowError as missing:
        await checkpoint.record_error(
            executor, ctx, function_id, SEND, missing, started_at_ms=caller.started_at_ms
        )
        raise


def recv(executor: Executor, topic: str | None, timeout_seconds: float) -> Coroutine[Any, Any, Any]:
    """Receive (workflow bodies only); both step ids are taken now."""
    ctx = workflow_outside_steps()
    if ctx is None:
        raise DBOSException("recv() must be called from within a workflow")
    check_seconds(timeout_seconds, "recv")
    receive_id = ctx.reserve_id()
    deadline_id = ctx.reserve_id()
    return _recv(ctx, receive_id, deadline_id, topic, timeout_seconds)


async def _recv(
    ctx: WorkflowContext,
    receive_id: int,
    deadline_id: int,
    topic: str | None,
    timeout_seconds: float,
) -> Any:
    executor = ctx.executor
    topic_value = NULL_TOPIC if topic is None else topic
    recorded = checkpoint.replayed(ctx, receive_id, RECV)
    if recorded is not None:
        return checkpoint.replay_value(executor, recorded)
    caller = caller_for(executor, ctx, receive_id)
    sysdb, clock = executor.sysdb, executor.clock
    with executor.wakeups.subscribe_exclusive(message_key(ctx.workflow_id, topic_value)) as wakeup:
        found = await sysdb.consume_message(caller, topic_value, clock.now_ms())
        if found is not None:
            return decode_payload(executor, found)
        wake = await durable_wake_time(executor, ctx, deadline_id, timeout_seconds)
        while (remaining := wake - clock.now()) > 0:
            woken = await wakeup.wait(min(remaining, sysdb.recheck_interval))
            if woken or await sysdb.has_message(ctx.workflow_id, topic_value):
                found = await sysdb.consume_message(caller, topic_value, clock.now_ms())
                if found is not None:
                    return decode_payload(executor, found)
    await record_payload(executor, ctx, receive_id, RECV, None, started_at_ms=caller.started_at_ms)
    return None
