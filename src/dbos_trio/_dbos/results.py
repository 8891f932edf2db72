"""Bulk sends, all events, one stream value and a result by id, as methods of ``DBOS``.

From a workflow body each is one checkpoint with the name dbos 3.4 records
(``DBOS.send_bulk``, ``DBOS.get_events``, ``DBOS.readStreamOffset``, ``DBOS.getResult``),
its step id taken at the call; arguments are checked at the call, before anything is
written or read.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any, Literal

import trio

from dbos_trio._core import validate
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.context import current_workflow
from dbos_trio._engine.durable.send_many import SendMessage
from dbos_trio._engine.workflows.handle import handle_for
from dbos_trio._ops import messages as ops
from dbos_trio.errors import DBOSException


class Results(DBOSBase):
    def send_bulk(
        self,
        messages: Sequence[SendMessage],
        *,
        serialization: Literal["portable", "native"] | None = None,
        send_to_forks: bool = False,
    ) -> Coroutine[Any, Any, None]:
        """Send every message in one transaction: all are delivered or none (a missing
        destination raises :class:`~dbos_trio.DBOSNonExistentWorkflowError` and sends
        nothing). Two messages with the same idempotency key and destination raise at
        the call. Cancelled while it runs: it committed whole or not at all. With
        ``send_to_forks`` each message also goes to every workflow forked from its
        destination, recursively."""
        return ops.send_bulk(
            self._reach, messages, serialization=serialization, send_to_forks=send_to_forks
        )

    def get_all_events(self, workflow_id: str) -> Coroutine[Any, Any, dict[str, Any]]:
        """Every event the workflow published, at its latest value (``{}`` if none)."""
        return ops.get_all_events(self._reach, workflow_id)

    def read_stream_offset(
        self,
        workflow_id: str,
        key: str,
        offset: int,
        *,
        timeout_seconds: float | None = None,
    ) -> Coroutine[Any, Any, Any]:
        """The one value at ``offset`` of the workflow's stream ``key``, waiting for it.

        Raises :class:`~dbos_trio.DBOSStreamTimeoutError` if the stream is closed (or
        its writer finished) before that offset, or nothing arrives within
        ``timeout_seconds``; :class:`~dbos_trio.DBOSNonExistentWorkflowError` for a
        missing workflow."""
        return ops.read_stream_offset(
            self._reach, workflow_id, key, offset, timeout_seconds=timeout_seconds
        )

    async def get_result(self, workflow_id: str, *, timeout: float | None = None) -> Any:
        """Wait for the workflow to finish; return its result or raise its error (as its
        handle's ``get_result`` does: a ``DBOS.getResult`` checkpoint from a body).

        With ``timeout`` (seconds; outside a workflow body only, where the wait is not
        checkpointed), waiting longer raises :class:`TimeoutError`; the workflow goes on.
        A missing workflow raises :class:`~dbos_trio.DBOSNonExistentWorkflowError`."""
        validate.text(workflow_id, "workflow_id")
        validate.optional_seconds(timeout, "timeout")
        executor = self._require_executor("get_result")
        handle = handle_for(executor, workflow_id)
        if timeout is None:
            return await handle.get_result()
        if current_workflow.get() is not None:
            raise DBOSException(
                "get_result(timeout=...) cannot be used in a workflow body (a timed-out wait "
                "cannot be replayed); use dbos.first_completed with a timeout instead"
            )
        # Only reads run under this deadline: cancelling one changes nothing.
        with trio.move_on_after(timeout):
            return await handle.get_result()
        raise TimeoutError(f"workflow {workflow_id} did not finish within {timeout} seconds")
