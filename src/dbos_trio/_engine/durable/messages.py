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

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from dbos_trio._core import validate
from dbos_trio._core.ids import random_uuid
from dbos_trio._core.units import message_id
from dbos_trio._engine.context import current_step
from dbos_trio._engine.durable.sleep import SLEEP, check_seconds, durable_wake_time
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot, decoded_payload, record_payload
from dbos_trio._sysdb.records import NULL_TOPIC, Caller
from dbos_trio._sysdb.wakeups import message_key
from dbos_trio.errors import (
    DBOSArgumentTypeError,
    DBOSException,
    DBOSNonExistentWorkflowError,
    DBOSValueTooLargeError,
)

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, Runtime

SEND = "DBOS.send"
RECV = "DBOS.recv"


def encode_payload(
    executor: Executor, value: Any, fmt: str, what: str, *, defer: bool = False
) -> str:
    """``value`` in format ``fmt``, or a :class:`DBOSException` naming ``what`` it was
    (``defer``: a payload store put left to :meth:`~dbos_trio._serialization.Codec.settle`)."""
    try:
        return executor.codec.encode(value, fmt, f"the {what}", defer=defer)
    except DBOSValueTooLargeError:
        raise  # names the value, its size and the limit already
    except Exception as error:
        raise DBOSArgumentTypeError(f"cannot serialize the {what} as {fmt}: {error}") from error


async def stored_payload(executor: Executor, value: Any, fmt: str, what: str) -> str:
    """:func:`encode_payload`, ready to write: a value over the payload store's threshold
    is put in the store in a worker thread first (cancellation waits for the put, so its
    entry is whole or absent; a failed put raises :class:`~dbos_trio.DBOSPayloadError`)."""
    encoded = await executor.codec.settle(encode_payload(executor, value, fmt, what, defer=True))
    assert encoded is not None
    return encoded


def message_label(destination_id: str, topic: str | None) -> str:
    """How a size or encoding error names a message."""
    on = "" if topic is None else f" on topic {topic!r}"
    return f"message to workflow {destination_id}{on}"


def send(
    executor: Executor,
    destination_id: str,
    message: Any,
    topic: str | None,
    idempotency_key: str | None,
) -> Coroutine[Any, Any, None]:
    """Send ``message``; from a workflow body the ``DBOS.send`` step id is taken now.

    Every argument is checked first (:mod:`dbos_trio._core.validate`): a bad one raises at
    the call, nothing written and no step id taken."""
    validate.text(destination_id, "destination_id")
    validate.optional_text(topic, "topic")
    validate.optional_text(idempotency_key, "idempotency_key")
    return _send(
        executor, checkpoint.reserve(SEND), destination_id, message, topic, idempotency_key
    )


async def _send(
    executor: Executor,
    slot: Slot | None,
    destination_id: str,
    message: Any,
    topic: str | None,
    idempotency_key: str | None,
) -> None:
    step = current_step.get()
    owning = slot.ctx if slot is not None else (step.workflow if step is not None else None)
    fmt = owning.serialization if owning is not None else executor.codec.default_format

    async def deliver() -> None:
        await send_message(
            executor,
            destination_id,
            await stored_payload(executor, message, fmt, message_label(destination_id, topic)),
            fmt,
            topic,
            idempotency_key,
            caller=None if slot is None else slot.caller(),
        )

    # A missing destination is the send's answer: recorded, so a replay raises it again.
    await checkpoint.checkpointed(
        slot, deliver, records_itself=True, record_errors=(DBOSNonExistentWorkflowError,)
    )


async def send_message(
    runtime: Runtime,
    destination_id: str,
    encoded: str,
    fmt: str,
    topic: str | None,
    idempotency_key: str | None,
    *,
    caller: Caller | None,
) -> None:
    """Insert one message (idempotently, by its id), with the caller's ``DBOS.send``
    checkpoint if there is a caller. A missing destination raises
    :class:`DBOSNonExistentWorkflowError`. A deferred payload store reference in
    ``encoded`` is settled first (its entry put before the row)."""
    encoded = await runtime.codec.settle(encoded) or encoded
    await runtime.sysdb.send(
        destination_id=destination_id,
        topic=topic_of(topic),
        message=encoded,
        serialization=fmt,
        message_uuid=random_uuid()
        if idempotency_key is None
        else message_id(idempotency_key, destination_id),
        now_ms=runtime.clock.now_ms(),
        caller=caller,
    )


def topic_of(topic: str | None) -> str:
    """The stored topic: the cross-SDK stand-in for "no topic" when None."""
    return NULL_TOPIC if topic is None else topic


def recv(topic: str | None, timeout_seconds: float) -> Coroutine[Any, Any, Any]:
    """Receive (workflow bodies only); both step ids are taken now."""
    validate.optional_text(topic, "topic")
    check_seconds(timeout_seconds, "recv: timeout_seconds")
    slot = checkpoint.reserve(RECV, ids=2)
    if slot is None:
        raise DBOSException("recv() must be called from within a workflow")
    return _recv(slot, topic, timeout_seconds)


async def _recv(slot: Slot, topic: str | None, timeout_seconds: float) -> Any:
    await slot.placed()
    executor = slot.executor
    recorded = slot.recorded()
    if recorded is not None:
        return await checkpoint.replayed_value(executor, recorded)
    topic_value = topic_of(topic)
    caller = slot.caller()
    sysdb, clock = executor.sysdb, executor.clock
    key = message_key(slot.ctx.workflow_id, topic_value)
    with executor.wakeups.subscribe_exclusive(key) as wakeup, checkpoint.control_latch(slot.ctx):
        found = await sysdb.consume_message(caller, topic_value, clock.now_ms())
        if found is not None:
            return await decoded_payload(executor, found)
        wake = await durable_wake_time(slot.following(SLEEP), timeout_seconds, projected=False)
        while (remaining := wake - clock.now()) > 0:
            woken = await wakeup.wait(min(remaining, sysdb.recheck_interval))
            if woken or await sysdb.has_message(slot.ctx.workflow_id, topic_value):
                found = await sysdb.consume_message(caller, topic_value, clock.now_ms())
                if found is not None:
                    return await decoded_payload(executor, found)
        await record_payload(slot, None, started_at_ms=caller.started_at_ms)
    return None
