"""Enqueueing, messages, events and streams, as methods of :class:`~dbos_trio.Client`.

Nothing a client does is checkpointed, even from inside a workflow body: it is an outside
observer, like the official ``DBOSClient``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._client.options import EnqueueOptions, SerializationChoice
from dbos_trio._client.rows import stored_row
from dbos_trio._engine.queues.enqueue import insert_queued
from dbos_trio._engine.workflows.options import StartExtras
from dbos_trio._engine.workflows.start import check_reuse, check_same_workflow
from dbos_trio._ops import messages as ops
from dbos_trio._ops.messages import SendMessage
from dbos_trio.errors import DBOSArgumentTypeError

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
        new = await stored_row(runtime, options, args, kwargs)
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

    def send(
        self,
        destination_id: str,
        message: Any,
        topic: str | None = None,
        idempotency_key: str | None = None,
        *,
        serialization: SerializationChoice | None = None,
        send_to_forks: bool = False,
    ) -> Coroutine[Any, Any, None]:
        """Send ``message`` to a workflow (missing destination: ``DBOSNonExistentWorkflowError``).

        With an ``idempotency_key`` any number of sends leave one message, so a send
        cancelled or failed midway can be retried safely; without one, a retry after an
        unknown outcome may deliver the message twice. With ``send_to_forks`` the message
        also goes to every workflow forked from the destination, recursively, in the same
        transaction.
        """
        return ops.send(
            self._reach,
            destination_id,
            message,
            topic,
            idempotency_key,
            serialization=serialization,
            send_to_forks=send_to_forks,
        )

    def send_bulk(
        self,
        messages: Sequence[SendMessage],
        *,
        serialization: SerializationChoice | None = None,
        send_to_forks: bool = False,
    ) -> Coroutine[Any, Any, None]:
        """Send every message in one transaction: all are delivered or none (a missing
        destination raises :class:`DBOSNonExistentWorkflowError` and sends nothing).

        Each message keeps a single send's id rule (an ``idempotency_key`` makes a retried
        batch insert nothing twice); the same key twice for one destination raises at the
        call. With ``send_to_forks`` each message also goes to every workflow forked from
        its destination. Cancelled while it runs: it committed whole or not at all.
        """
        return ops.send_bulk(
            self._reach, messages, serialization=serialization, send_to_forks=send_to_forks
        )

    def get_event(
        self, workflow_id: str, key: str, timeout_seconds: float = 60
    ) -> Coroutine[Any, Any, Any]:
        """The latest value of a workflow's event, waiting up to the timeout; None if unset."""
        return ops.get_event(self._reach, workflow_id, key, timeout_seconds)

    def read_stream(
        self,
        workflow_id: str,
        key: str,
        *,
        offset: int = 0,
        timeout_seconds: float | None = None,
        polling_interval_sec: float | None = None,
    ) -> AsyncIterator[Any]:
        """``async for value in client.read_stream(id, key)``: values in order from
        ``offset`` until the stream is closed, or drained after its writer finished.

        With ``timeout_seconds``, waiting longer than that for any one value raises
        :class:`DBOSStreamTimeoutError`. A missing workflow raises
        :class:`DBOSNonExistentWorkflowError`. While waiting the stream is re-read every
        ``polling_interval_sec`` (default: the backend's re-check interval).
        """
        return ops.read_stream(
            self._reach,
            workflow_id,
            key,
            offset=offset,
            timeout_seconds=timeout_seconds,
            polling_interval_sec=polling_interval_sec,
        )

    def read_stream_offset(
        self,
        workflow_id: str,
        key: str,
        offset: int,
        *,
        timeout_seconds: float | None = None,
    ) -> Coroutine[Any, Any, Any]:
        """The one value at ``offset`` of the workflow's stream ``key``, waiting for it.

        Raises :class:`DBOSStreamTimeoutError` if the stream is closed (or its writer
        finished) before that offset, or nothing arrives within ``timeout_seconds``;
        :class:`DBOSNonExistentWorkflowError` for a missing workflow. Cancellation raises
        ``trio.Cancelled`` and changes nothing.
        """
        return ops.read_stream_offset(
            self._reach, workflow_id, key, offset, timeout_seconds=timeout_seconds
        )
