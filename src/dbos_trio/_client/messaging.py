"""Enqueueing, messages, events and streams, as methods of :class:`~dbos_trio.Client`.

Nothing a client does is checkpointed, even from inside a workflow body: it is an outside
observer, like the official ``DBOSClient``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._client.options import EnqueueOptions, SerializationChoice, payload_format
from dbos_trio._client.rows import enqueued_row
from dbos_trio._core import validate
from dbos_trio._engine.durable import waits
from dbos_trio._engine.durable.messages import send_message
from dbos_trio._engine.durable.sleep import check_seconds
from dbos_trio._engine.durable.streams import is_end
from dbos_trio._engine.queues.enqueue import insert_queued
from dbos_trio._engine.workflows.options import StartExtras
from dbos_trio._engine.workflows.start import check_reuse, check_same_workflow
from dbos_trio._sysdb.wakeups import stream_key
from dbos_trio.errors import DBOSArgumentTypeError, DBOSException

logger = logging.getLogger("dbos_trio._client")


class ClientMessaging(ClientBase):
    # --- enqueue ---------------------------------------------------------------------

    async def enqueue(
        self, options: EnqueueOptions, *args: Any, **kwargs: Any
    ) -> ClientWorkflowHandle[Any]:
        """Write an ENQUEUED (or, with a delay, DELAYED) row for the named workflow.

        The executor that serves ``options.queue_name`` runs it. A deduplication id
        already held on the queue raises :class:`DBOSQueueDeduplicatedError`, or with
        ``duplication_policy="return-existing"`` returns the holder's handle. An existing
        ``workflow_id`` returns that workflow's handle (if it names the same function).
        The row is one insert: a cancelled call enqueued the workflow or did not (retry
        it with the same ``workflow_id`` to be sure of one).
        """
        runtime = self._require("enqueue")
        if not isinstance(options, EnqueueOptions):
            raise DBOSArgumentTypeError(
                f"enqueue needs EnqueueOptions, not {type(options).__name__}"
            )
        new = enqueued_row(runtime, options, args, kwargs)
        workflow_id = new.workflow_id
        init = await insert_queued(runtime, new, None, options.duplication_policy)
        if isinstance(init, str):
            return self._handle(init)
        check_same_workflow(
            workflow_id, init, options.workflow_name, options.class_name, options.instance_name
        )
        check_reuse(workflow_id, init, StartExtras(reuse_policy=options.workflow_id_reuse_policy))
        if not init.created and (init.queue_name or None) != options.queue_name:
            logger.warning(
                "Workflow already exists in queue: %s, but the provided queue name is: %s. "
                "The queue is not updated.",
                init.queue_name,
                options.queue_name,
            )
        return self._handle(workflow_id)

    # --- messages, events, streams ---------------------------------------------------

    async def send(
        self,
        destination_id: str,
        message: Any,
        topic: str | None = None,
        idempotency_key: str | None = None,
        *,
        serialization: SerializationChoice | None = None,
    ) -> None:
        """Send ``message`` to a workflow (missing destination: ``DBOSNonExistentWorkflowError``).

        With an ``idempotency_key`` any number of sends leave one message, so a send
        cancelled or failed midway can be retried safely; without one, a retry after an
        unknown outcome may deliver the message twice.
        """
        validate.text(destination_id, "destination_id")
        validate.optional_text(topic, "topic")
        validate.optional_text(idempotency_key, "idempotency_key")
        runtime = self._require("send")
        fmt = payload_format(runtime.codec, serialization)
        try:
            encoded = runtime.codec.encode(message, fmt)
        except Exception as error:
            raise DBOSException(f"cannot serialize the message as {fmt}: {error}") from error
        await send_message(
            runtime, destination_id, encoded, fmt, topic, idempotency_key, caller=None
        )

    async def get_event(self, workflow_id: str, key: str, timeout_seconds: float = 60) -> Any:
        """The latest value of a workflow's event, waiting up to the timeout; None if unset."""
        validate.text(workflow_id, "workflow_id")
        validate.text(key, "key")
        check_seconds(timeout_seconds, "get_event: timeout_seconds")
        runtime = self._require("get_event")

        async def deadline() -> float:
            return runtime.clock.now() + timeout_seconds

        found = await waits.wait_for_event(runtime, workflow_id, key, deadline)
        return None if found is None else runtime.codec.decode(found[0], found[1])

    async def read_stream(
        self,
        workflow_id: str,
        key: str,
        *,
        offset: int = 0,
        timeout_seconds: float | None = None,
    ) -> AsyncIterator[Any]:
        """``async for value in client.read_stream(id, key)``: values in order from
        ``offset`` until the stream is closed, or drained after its writer finished.

        With ``timeout_seconds``, waiting longer than that for any one value raises
        :class:`DBOSStreamTimeoutError`. A missing workflow raises
        :class:`DBOSNonExistentWorkflowError`.
        """
        validate.text(workflow_id, "workflow_id")
        validate.text(key, "key")
        validate.integer(offset, "offset", low=0)
        validate.optional_seconds(timeout_seconds, "timeout_seconds", forever_allowed=True)
        runtime = self._require("read_stream")
        if timeout_seconds is not None and timeout_seconds < 0:
            raise ValueError(f"timeout_seconds must not be negative, got {timeout_seconds}")
        with runtime.wakeups.subscribe(stream_key(workflow_id, key)) as wakeup:
            while True:
                values = await waits.next_stream_values(
                    runtime, wakeup, workflow_id, key, offset, timeout_seconds=timeout_seconds
                )
                if not values:
                    return  # drained after the writer ended
                for value, fmt in values:
                    if is_end(value, fmt):
                        return
                    offset += 1
                    yield runtime.codec.decode(value, fmt)
