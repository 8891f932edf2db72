"""Sending many messages at once, to forks too, and in a chosen format.

Invariants, and why:

* ``send_bulk`` is one transaction and, from a workflow body, one checkpoint
  (``DBOS.send_bulk``, the name dbos 3.4 records), its step id taken at the call: every
  message is delivered or none is, and a replay delivers nothing again. Each message keeps
  the single send's id rule (random, or ``"{idempotency_key}::{destination}"``), so a
  retried batch inserts nothing twice; two messages of one batch with the same id are
  refused at the call.
* ``send_to_forks`` delivers to the destination and to every workflow forked from it,
  recursively, found when the send runs (a replay returns the recorded checkpoint and so
  does not look again).
* The format of a message is the caller's choice (``serialization="portable"`` or
  ``"native"``) or else the sending workflow's, as for a single send.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

from dbos_trio._core import validate
from dbos_trio._core.ids import random_uuid
from dbos_trio._core.units import message_id
from dbos_trio._engine.context import current_step
from dbos_trio._engine.durable.messages import SEND, message_label, stored_payload, topic_of
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._serialization import PICKLE, PORTABLE_JSON
from dbos_trio._sysdb.records import OutgoingMessage
from dbos_trio.errors import (
    DBOSArgumentTypeError,
    DBOSInvalidArgumentError,
    DBOSNonExistentWorkflowError,
)

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, Runtime

SEND_BULK = "DBOS.send_bulk"
SerializationChoice = Literal["portable", "native"]


@attrs.frozen
class SendMessage:
    """One message of :meth:`dbos_trio.DBOS.send_bulk`: where, what, on which topic, and
    an optional idempotency key (as for a single ``send``). Positional or by keyword:
    ``SendMessage("dest", "msg", "topic")``, as dbos 3.4's."""

    destination_id: str
    message: Any
    topic: str | None = None
    idempotency_key: str | None = None


def chosen_format(runtime: Runtime, choice: SerializationChoice | None, default: str) -> str:
    """The stored format for a per-call ``serialization`` choice (None: ``default``)."""
    if choice is None:
        return default
    if choice == "portable":
        return PORTABLE_JSON
    if choice == "native":
        return PICKLE
    raise DBOSInvalidArgumentError(
        f"serialization must be 'portable', 'native' or None, not {choice!r}"
    )


def _checked(messages: Sequence[SendMessage]) -> list[SendMessage]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise DBOSArgumentTypeError("send_bulk needs a list of SendMessage")
    seen: set[tuple[str, str]] = set()
    for index, message in enumerate(messages):
        if not isinstance(message, SendMessage):
            raise DBOSArgumentTypeError(
                f"send_bulk: messages[{index}] must be a SendMessage, not {type(message).__name__}"
            )
        validate.text(message.destination_id, f"messages[{index}].destination_id")
        validate.optional_text(message.topic, f"messages[{index}].topic")
        validate.optional_text(message.idempotency_key, f"messages[{index}].idempotency_key")
        if message.idempotency_key is not None:
            pair = (message.idempotency_key, message.destination_id)
            if pair in seen:
                raise DBOSInvalidArgumentError(
                    f"send_bulk received duplicate idempotency keys: {message.idempotency_key} "
                    f"(used twice for destination {message.destination_id!r})"
                )
            seen.add(pair)
    return list(messages)


def send_bulk(
    executor: Executor,
    messages: Sequence[SendMessage],
    *,
    serialization: SerializationChoice | None = None,
    send_to_forks: bool = False,
    step_name: str = SEND_BULK,
) -> Coroutine[Any, Any, None]:
    """Send every message in one transaction; from a workflow body one ``step_name``
    checkpoint, its id taken now. Bad input raises at the call, nothing written."""
    batch = _checked(messages)
    validate.boolean(send_to_forks, "send_to_forks")
    chosen_format(executor, serialization, "")  # checked now, resolved when it runs
    return _send_bulk(
        executor, checkpoint.reserve(step_name), batch, serialization, send_to_forks, step_name
    )


def send_one(
    executor: Executor,
    destination_id: str,
    message: Any,
    topic: str | None,
    idempotency_key: str | None,
    *,
    serialization: SerializationChoice | None,
    send_to_forks: bool,
) -> Coroutine[Any, Any, None]:
    """A single ``send`` with a format choice or to forks: still one ``DBOS.send`` step."""
    one = SendMessage(
        destination_id=destination_id,
        message=message,
        topic=topic,
        idempotency_key=idempotency_key,
    )
    return send_bulk(
        executor, [one], serialization=serialization, send_to_forks=send_to_forks, step_name=SEND
    )


async def forks_of(runtime: Runtime, workflow_id: str) -> list[str]:
    """Every workflow forked from ``workflow_id``, recursively, breadth first."""
    found: list[str] = []
    seen = {workflow_id}
    level = [workflow_id]
    while level:
        level = [f for f in await runtime.sysdb.list_forks(level) if f not in seen]
        seen.update(level)
        found.extend(level)
    return found


async def _send_bulk(
    executor: Executor,
    slot: Slot | None,
    batch: list[SendMessage],
    serialization: SerializationChoice | None,
    send_to_forks: bool,
    step_name: str,
) -> None:
    step = current_step.get()
    owning = slot.ctx if slot is not None else (step.workflow if step is not None else None)
    default = owning.serialization if owning is not None else executor.codec.default_format
    fmt = chosen_format(executor, serialization, default)

    async def deliver() -> None:
        outgoing: list[OutgoingMessage] = []
        for message in batch:
            encoded = await stored_payload(
                executor, message.message, fmt, message_label(message.destination_id, message.topic)
            )
            targets = [message.destination_id]
            if send_to_forks:
                targets += await forks_of(executor, message.destination_id)
            for target in targets:
                outgoing.append(
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
        await executor.sysdb.send_bulk(
            outgoing,
            now_ms=executor.clock.now_ms(),
            caller=None if slot is None else slot.caller(),
            step_name=step_name,
        )

    await checkpoint.checkpointed(
        slot, deliver, records_itself=True, record_errors=(DBOSNonExistentWorkflowError,)
    )
