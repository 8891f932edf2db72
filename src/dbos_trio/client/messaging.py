"""Enqueueing, messages, events and streams, as methods of :class:`~dbos_trio.Client`.

Nothing a client does is checkpointed, even from inside a workflow body: it is an outside
observer, like the official ``DBOSClient``.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from .._errors import DBOSArgumentTypeError, DBOSException
from ..core import validate
from ..core.units import timeout_ms
from ..engine import waits
from ..engine.messages import send_message
from ..engine.queues import insert_queued
from ..engine.rows import Placement, Writer, new_row
from ..engine.sleep import check_seconds
from ..engine.start import check_same_workflow
from ..engine.streams import is_end
from ..engine.telemetry import ambient_carrier_attributes
from ..sysdb.wakeups import stream_key
from .base import ClientBase, ClientWorkflowHandle
from .options import EnqueueOptions, SerializationChoice, payload_format

logger = logging.getLogger("dbos_trio.client")


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
        codec, clock = runtime.codec, runtime.clock
        fmt = payload_format(codec, options.serialization)
        try:
            inputs = codec.encode_inputs(tuple(args), dict(kwargs), fmt)
        except Exception as error:
            raise DBOSException(
                f"cannot serialize the arguments of workflow {options.workflow_name} as "
                f"{fmt}: {error}"
            ) from error
        workflow_id = options.workflow_id or str(uuid.uuid4())
        new = new_row(
            workflow_id=workflow_id,
            name=options.workflow_name,
            class_name=options.class_name,
            config_name=options.instance_name,
            inputs=inputs,
            serialization=fmt,
            now_ms=clock.now_ms(),
            # No executor and no version unless asked: any executor of the application
            # may claim it.
            writer=Writer(
                executor_id=None,
                application_version=options.app_version,
                application_id=None,
                application_name=options.application_name or runtime.app_name,
            ),
            placement=Placement(
                queue_name=options.queue_name,
                deduplication_id=options.deduplication_id,
                priority=options.priority,
                partition_key=options.queue_partition_key,
                delay_seconds=options.delay_seconds,
            ),
            timeout_ms=None
            if options.workflow_timeout is None
            else timeout_ms(options.workflow_timeout),
            authenticated_user=options.authenticated_user,
            authenticated_roles=json.dumps(list(options.authenticated_roles))
            if options.authenticated_roles
            else None,
            attributes=ambient_carrier_attributes(),
        )
        init = await insert_queued(runtime, new, None, options.duplication_policy)
        if isinstance(init, str):
            return self._handle(init)
        check_same_workflow(
            workflow_id, init, options.workflow_name, options.class_name, options.instance_name
        )
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
