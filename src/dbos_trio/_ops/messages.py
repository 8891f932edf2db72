"""Messages, events and streams every face shares: send, send_bulk, get_event,
get_all_events, read_stream, read_stream_offset.

Each function validates every argument, then asks the :class:`~.reach.Reach` for its
runtime, at the call: a bad value (or a closed face) raises before anything is written,
and ``DBOS``'s step ids are reserved in call order.

Invariants, and why:

* **A send, a ``get_event`` and a stream read from a ``DBOS`` workflow body are more than
  a checkpoint around a call.** The message commits in the same statement as its
  ``DBOS.send`` checkpoint (a replay never sends twice), ``get_event``'s timeout is itself
  durable (a second step id), and a stream read records each value before yielding it.
  :meth:`Reach.checkpoint` cannot say that, so these three ask whether the reach answered
  an :class:`~dbos_trio._engine.state.Executor` — what ``DBOS`` reaches — and then take
  the engine's durable primitives, which record exactly when called from one of its
  workflow bodies. Any other runtime (a client's, the command line's) records nothing,
  even from inside a workflow body: it is an outside observer, as the official client is.
* **The reads that are one answer** (``get_all_events``, ``read_stream_offset``) are a
  plain :meth:`Reach.checkpoint`, under the names dbos 3.4 records
  (``DBOS.get_events``, ``DBOS.readStreamOffset``).
* **One id rule for every message**: random, or ``"{idempotency_key}::{destination}"``
  so retried sends leave one message; a bulk send is one transaction (all or none).

Cancellation: a send or bulk send committed whole or not at all; a cancelled read
records nothing. A database failure raises :class:`~dbos_trio.SystemDatabaseError` after
the retries; a missing destination :class:`~dbos_trio.DBOSNonExistentWorkflowError`.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import Any

from dbos_trio._core import validate
from dbos_trio._core.ids import random_uuid
from dbos_trio._core.units import message_id
from dbos_trio._engine.durable import events, messages, published, streams, waits
from dbos_trio._engine.durable import send_many as bulk
from dbos_trio._engine.durable.messages import SEND, send_message, topic_of
from dbos_trio._engine.durable.send_many import SEND_BULK, SendMessage, SerializationChoice
from dbos_trio._engine.durable.sleep import check_seconds
from dbos_trio._engine.state import Executor, Runtime
from dbos_trio._ops.reach import Reach
from dbos_trio._sysdb.records import OutgoingMessage
from dbos_trio._sysdb.wakeups import stream_key
from dbos_trio.errors import DBOSArgumentTypeError, DBOSValueTooLargeError

__all__ = [
    "SEND",
    "SEND_BULK",
    "SendMessage",
    "SerializationChoice",
    "checked_batch",
    "get_all_events",
    "get_event",
    "outgoing",
    "read_stream",
    "read_stream_offset",
    "send",
    "send_bulk",
]

# How a send to forks finds them: every workflow forked from one id, recursively.
FindForks = Callable[[str], Awaitable[list[str]]]


def _recording(runtime: Runtime) -> Executor | None:
    """The executor whose workflow bodies these calls record in, or None (see the module
    docs: only ``DBOS`` reaches an executor)."""
    return runtime if isinstance(runtime, Executor) else None


def checked_batch(messages_: Sequence[SendMessage]) -> list[SendMessage]:
    """The batch as a list, every message checked (a :class:`SendMessage`, text ids, no
    idempotency key twice for one destination); raises before anything is sent."""
    return bulk._checked(messages_)


def _format(runtime: Runtime, serialization: SerializationChoice | None) -> str:
    return bulk.chosen_format(runtime, serialization, runtime.codec.default_format)


def _encode(runtime: Runtime, value: Any, fmt: str, destination_id: str = "") -> str:
    # Deferred: a payload store put runs in a worker thread, settled before the row is
    # written (send_message, and outgoing below).
    try:
        what = f"the message to workflow {destination_id}"
        return runtime.codec.encode(value, fmt, what, defer=True)
    except DBOSValueTooLargeError:
        raise  # names the value, its size and the limit already
    except Exception as error:
        raise DBOSArgumentTypeError(f"cannot serialize the message as {fmt}: {error}") from error


async def outgoing(
    runtime: Runtime,
    batch: Sequence[SendMessage],
    fmt: str,
    forks: FindForks | None,
) -> list[OutgoingMessage]:
    """The rows of an unrecorded bulk send: each message encoded in ``fmt``, addressed to
    its destination and, with ``forks``, to every fork of it found now."""
    rows: list[OutgoingMessage] = []
    for message in batch:
        encoded = await runtime.codec.settle(
            _encode(runtime, message.message, fmt, message.destination_id)
        )
        assert encoded is not None
        targets = [message.destination_id]
        if forks is not None:
            targets += await forks(message.destination_id)
        for target in targets:
            rows.append(
                OutgoingMessage(
                    destination_id=target,
                    topic=topic_of(message.topic),
                    message=encoded,
                    serialization=fmt,
                    message_uuid=random_uuid()
                    if message.idempotency_key is None
                    else message_id(message.idempotency_key, target),
                )
            )
    return rows


async def _send_unrecorded(
    runtime: Runtime,
    batch: list[SendMessage],
    serialization: SerializationChoice | None,
    send_to_forks: bool,
    step_name: str,
) -> None:
    fmt = _format(runtime, serialization)
    if len(batch) == 1 and not send_to_forks and step_name == SEND:
        one = batch[0]
        await send_message(
            runtime,
            one.destination_id,
            _encode(runtime, one.message, fmt, one.destination_id),
            fmt,
            one.topic,
            one.idempotency_key,
            caller=None,
        )
        return

    async def forks(workflow_id: str) -> list[str]:
        return await bulk.forks_of(runtime, workflow_id)

    rows = await outgoing(runtime, batch, fmt, forks if send_to_forks else None)
    await runtime.sysdb.send_bulk(
        rows, now_ms=runtime.clock.now_ms(), caller=None, step_name=step_name
    )


def send(
    reach: Reach,
    destination_id: str,
    message: Any,
    topic: str | None = None,
    idempotency_key: str | None = None,
    *,
    serialization: SerializationChoice | None = None,
    send_to_forks: bool = False,
) -> Coroutine[Any, Any, None]:
    """Send ``message`` to ``destination_id`` on ``topic`` (with ``send_to_forks``, to every
    workflow forked from it too, in the same transaction), stored in ``serialization``'s
    format (default: the sending workflow's, else the codec's). Step ``DBOS.send``."""
    validate.text(destination_id, "destination_id")
    validate.optional_text(topic, "topic")
    validate.optional_text(idempotency_key, "idempotency_key")
    validate.boolean(send_to_forks, "send_to_forks")
    runtime = reach.runtime("send")
    _format(runtime, serialization)  # checked now; the default is resolved when it runs
    executor = _recording(runtime)
    if executor is not None:
        if serialization is None and not send_to_forks:
            return messages.send(executor, destination_id, message, topic, idempotency_key)
        return bulk.send_one(
            executor,
            destination_id,
            message,
            topic,
            idempotency_key,
            serialization=serialization,
            send_to_forks=send_to_forks,
        )
    one = SendMessage(
        destination_id=destination_id,
        message=message,
        topic=topic,
        idempotency_key=idempotency_key,
    )
    return _send_unrecorded(runtime, [one], serialization, send_to_forks, SEND)


def send_bulk(
    reach: Reach,
    messages_: Sequence[SendMessage],
    *,
    serialization: SerializationChoice | None = None,
    send_to_forks: bool = False,
) -> Coroutine[Any, Any, None]:
    """Send every message in one transaction (all delivered, or none: a missing
    destination sends nothing). Step ``DBOS.send_bulk``."""
    batch = checked_batch(messages_)
    validate.boolean(send_to_forks, "send_to_forks")
    runtime = reach.runtime("send_bulk")
    _format(runtime, serialization)
    executor = _recording(runtime)
    if executor is not None:
        return bulk.send_bulk(
            executor, batch, serialization=serialization, send_to_forks=send_to_forks
        )
    return _send_unrecorded(runtime, batch, serialization, send_to_forks, SEND_BULK)


def get_event(
    reach: Reach, workflow_id: str, key: str, timeout_seconds: float = 60
) -> Coroutine[Any, Any, Any]:
    """The latest value of the workflow's event ``key``, waiting up to ``timeout_seconds``
    for one; None if it stays unset. From a ``DBOS`` body: ``DBOS.getEvent`` with a
    durable timeout (two step ids)."""
    validate.text(workflow_id, "workflow_id")
    validate.text(key, "key")
    check_seconds(timeout_seconds, "get_event: timeout_seconds")
    runtime = reach.runtime("get_event")
    executor = _recording(runtime)
    if executor is not None:
        return events.get_event(executor, workflow_id, key, timeout_seconds)
    return _get_event_unrecorded(runtime, workflow_id, key, timeout_seconds)


async def _get_event_unrecorded(
    runtime: Runtime, workflow_id: str, key: str, timeout_seconds: float
) -> Any:
    async def deadline() -> float:
        return runtime.clock.now() + timeout_seconds

    found = await waits.wait_for_event(runtime, workflow_id, key, deadline)
    if found is None:
        return None
    await runtime.codec.prefetch(found[0])
    return runtime.codec.decode(found[0], found[1])


def get_all_events(reach: Reach, workflow_id: str) -> Coroutine[Any, Any, dict[str, Any]]:
    """Every event the workflow published, at its latest value (``{}`` if none). Step
    ``DBOS.get_events``."""
    validate.text(workflow_id, "workflow_id")
    runtime = reach.runtime("get_all_events")

    async def read() -> dict[str, Any]:
        return await published.all_events(runtime, workflow_id)

    return reach.checkpoint(published.GET_EVENTS, read)


def _stream_timeout(timeout_seconds: float | None) -> float | None:
    # Infinity is "no timeout": one spelling of it for the engine's waits.
    checked = validate.optional_seconds(timeout_seconds, "timeout_seconds", forever_allowed=True)
    return None if checked is None or math.isinf(checked) else timeout_seconds


def read_stream(
    reach: Reach,
    workflow_id: str,
    key: str,
    *,
    offset: int = 0,
    timeout_seconds: float | None = None,
    polling_interval_sec: float | None = None,
) -> AsyncIterator[Any]:
    """The stream's values in order from ``offset``, until it is closed or drained after
    its writer ended; waiting longer than ``timeout_seconds`` for one value raises
    :class:`~dbos_trio.DBOSStreamTimeoutError`. While waiting, the stream is re-read every
    ``polling_interval_sec`` (default: the backend's re-check interval) and at once on a
    notification. From a ``DBOS`` body each value (and the end) is a ``DBOS.readStream``
    checkpoint. Cancelling the loop loses nothing."""
    validate.text(workflow_id, "workflow_id")
    validate.text(key, "key")
    validate.integer(offset, "offset", low=0)
    timeout = _stream_timeout(timeout_seconds)
    poll = validate.optional_seconds(polling_interval_sec, "polling_interval_sec", positive=True)
    runtime = reach.runtime("read_stream")
    executor = _recording(runtime)
    if executor is not None:
        return streams.read_stream(executor, workflow_id, key, offset, timeout, poll)
    return _read_unrecorded(runtime, workflow_id, key, offset, timeout, poll)


async def _read_unrecorded(
    runtime: Runtime,
    workflow_id: str,
    key: str,
    offset: int,
    timeout_seconds: float | None,
    poll_interval: float | None,
) -> AsyncIterator[Any]:
    with runtime.wakeups.subscribe(stream_key(workflow_id, key)) as wakeup:
        while True:
            values = await waits.next_stream_values(
                runtime,
                wakeup,
                workflow_id,
                key,
                offset,
                timeout_seconds=timeout_seconds,
                poll_interval=poll_interval,
            )
            if not values:
                return  # drained after the writer ended
            for value, fmt in values:
                if streams.is_end(value, fmt):
                    return
                offset += 1
                await runtime.codec.prefetch(value)
                yield runtime.codec.decode(value, fmt)


def read_stream_offset(
    reach: Reach,
    workflow_id: str,
    key: str,
    offset: int,
    *,
    timeout_seconds: float | None = None,
) -> Coroutine[Any, Any, Any]:
    """The one value at ``offset`` of the stream, waiting for it; raises
    :class:`~dbos_trio.DBOSStreamTimeoutError` if the stream ends before that offset or
    nothing arrives within ``timeout_seconds``. Step ``DBOS.readStreamOffset``."""
    validate.text(workflow_id, "workflow_id")
    validate.text(key, "key")
    validate.integer(offset, "offset", low=0)
    timeout = _stream_timeout(timeout_seconds)
    runtime = reach.runtime("read_stream_offset")

    async def read() -> Any:
        return await published.stream_value_at(runtime, workflow_id, key, offset, timeout)

    return reach.checkpoint(published.READ_STREAM_OFFSET, read)
