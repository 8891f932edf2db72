"""Starting workflows and the durable primitives, as methods of ``DBOS``.

Most of these are not ``async def``: they return a coroutine, and from a workflow body
their step ids are reserved at the call (see :mod:`dbos_trio._engine.workflows.checkpoint`), so
concurrent calls from one body are numbered in call order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, ParamSpec, TypeVar

from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.context import current_step, current_workflow
from dbos_trio._engine.durable import events, sleep, streams
from dbos_trio._engine.durable import messages as engine_messages
from dbos_trio._engine.durable import send_many as bulk
from dbos_trio._engine.workflows.handle import (
    WorkflowHandle,
    start_workflow,
    wait_first,
)
from dbos_trio._ops import inspect, messages
from dbos_trio._registry import resolve_workflow

P = ParamSpec("P")
R = TypeVar("R")


class Durable(DBOSBase):
    # --- context -----------------------------------------------------------------------

    @property
    def workflow_id(self) -> str | None:
        """The running workflow's id (inside a step: the enclosing workflow's); else None."""
        ctx = current_workflow.get()
        return None if ctx is None else ctx.workflow_id

    @property
    def step_id(self) -> int | None:
        """The running step's id, inside a step; else None."""
        step = current_step.get()
        return None if step is None else step.step_id

    # --- starting and handles ----------------------------------------------------------

    def start_workflow(
        self, fn: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, WorkflowHandle[R]]:
        """Start ``fn`` in the executor's nursery; return once its row exists.

        Not async: inside a workflow the child's step id is taken at the call. An id that
        exists already returns that workflow's handle (it does not run again); the same
        id for another function raises :class:`~dbos_trio.DBOSConflictingWorkflowError`.
        Cancelling the call before the row is written starts nothing; once it returned,
        the workflow runs on whatever happens to the caller (cancel it with
        ``cancel_workflow``). The workflow's own errors reach ``handle.get_result()``.
        """
        executor = self._require_executor("start_workflow")
        registered, call_args = resolve_workflow(fn, args)
        return start_workflow(executor, registered, call_args, dict(kwargs))

    def wait_first(
        self, handles: Sequence[WorkflowHandle[Any]]
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """The first of ``handles`` whose workflow is no longer PENDING/ENQUEUED/DELAYED."""
        executor = self._require_executor("wait_first")
        return wait_first(executor, handles)

    async def retrieve_workflow(self, workflow_id: str) -> WorkflowHandle[Any]:
        """A handle on an existing workflow (one read, to check that it exists).

        Raises :class:`~dbos_trio.DBOSNonExistentWorkflowError` if no workflow has the id.
        Cancellation raises ``trio.Cancelled`` (nothing is written); a database failure
        raises :class:`~dbos_trio.SystemDatabaseError` after the retries. Awaiting the
        handle's ``get_result()`` is a separate wait with its own rules.
        """
        return await self._handled(inspect.retrieve_workflow(self._reach, workflow_id))

    # --- durable primitives ------------------------------------------------------------

    def sleep(self, seconds: float) -> Coroutine[Any, Any, None]:
        """Durable sleep (workflow only): recovery sleeps only the remainder.

        The wake-up time is recorded (a ``DBOS.sleep`` checkpoint) before the wait, so a
        cancelled or crashed sleep resumes, on recovery, until that same time.
        ``seconds <= 0`` returns at once; inside a step it is a plain ``trio.sleep``;
        outside any workflow it raises :class:`~dbos_trio.DBOSException`.
        """
        return sleep.sleep(seconds)

    def send(
        self,
        destination_id: str,
        message: Any,
        topic: str | None = None,
        *,
        idempotency_key: str | None = None,
        serialization: Literal["portable", "native"] | None = None,
        send_to_forks: bool = False,
    ) -> Coroutine[Any, Any, None]:
        """Send ``message`` to a workflow (from anywhere), on ``topic``.

        A missing destination raises :class:`~dbos_trio.DBOSNonExistentWorkflowError`.
        From a workflow body the message and its ``DBOS.send`` checkpoint commit together,
        so a replay never sends twice; elsewhere pass ``idempotency_key`` to make retried
        sends leave one message. Cancelled, the message was sent or it was not; a
        database failure raises :class:`~dbos_trio.SystemDatabaseError` after the retries.

        With ``send_to_forks`` the message also goes to every workflow forked from the
        destination, recursively, in the same transaction; ``serialization`` picks the
        stored format (default: the sending workflow's).
        """
        return messages.send(
            self._reach,
            destination_id,
            message,
            topic,
            idempotency_key,
            serialization=serialization,
            send_to_forks=send_to_forks,
        )

    def recv(
        self, topic: str | None = None, timeout_seconds: float = 60
    ) -> Coroutine[Any, Any, Any]:
        """The oldest unconsumed message on ``topic`` (workflow only), or None on timeout.

        The deadline is durable (a ``DBOS.sleep`` checkpoint): a recovered ``recv`` keeps
        it. Consuming the message and recording it are one transaction, so a message is
        consumed once; a cancelled ``recv`` consumed nothing and a replay waits again.
        Outside a workflow, or while another ``recv`` of the same workflow waits on the
        same topic, it raises :class:`~dbos_trio.DBOSException`.
        """
        self._require_executor("recv")
        return engine_messages.recv(topic, timeout_seconds)

    def set_event(
        self, key: str, value: Any, *, serialization: Literal["portable", "native"] | None = None
    ) -> Coroutine[Any, Any, None]:
        """Publish ``key = value`` for the running workflow (from its body or a step).

        The latest value wins; each one is kept in the event's history. From a body the
        write and its ``DBOS.setEvent`` checkpoint commit together (a replay does not write
        again); cancelled, it happened or it did not. Outside a workflow it raises
        :class:`~dbos_trio.DBOSException`.

        ``serialization`` picks the stored format (default: the workflow's).
        """
        executor = self._require_executor("set_event")
        fmt = None if serialization is None else bulk.chosen_format(executor, serialization, "")
        return events.set_event(key, value, fmt)

    def get_event(
        self, workflow_id: str, key: str, timeout_seconds: float = 60
    ) -> Coroutine[Any, Any, Any]:
        """The latest value of a workflow's event, waiting up to the timeout; None if unset.

        Callable from anywhere; from a workflow body the answer (or the timeout) is a
        checkpoint, so a replay returns it again. Cancellation raises ``trio.Cancelled``
        and records nothing; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        return messages.get_event(self._reach, workflow_id, key, timeout_seconds)

    def write_stream(
        self, key: str, value: Any, *, serialization: Literal["portable", "native"] | None = None
    ) -> Coroutine[Any, Any, None]:
        """Append ``value`` to the running workflow's stream ``key`` (body or step).

        Outside a workflow it raises :class:`~dbos_trio.DBOSException`. The append and, from
        a body, its ``DBOS.writeStream`` checkpoint are one statement: a cancelled call
        (``trio.Cancelled``) appended and recorded the value or did neither, so a replay
        never appends twice. A value the serializer cannot encode raises before anything
        is written; a database failure raises :class:`~dbos_trio.SystemDatabaseError`
        after the retries, and an execution that no longer owns its workflow raises
        :class:`~dbos_trio.DBOSWorkflowConflictIDError`.

        ``serialization`` picks the stored format (default: the workflow's).
        """
        executor = self._require_executor("write_stream")
        fmt = None if serialization is None else bulk.chosen_format(executor, serialization, "")
        return streams.write_stream(key, value, fmt)

    def close_stream(self, key: str) -> Coroutine[Any, Any, None]:
        """Close the running workflow's stream ``key``: readers stop after its last value.

        Appends the close marker that every SDK's reader recognises; cancellation and
        errors are as for :meth:`write_stream` (the close happened, checkpoint included,
        or it did not). A stream is also ended for readers once its workflow finishes.
        """
        self._require_executor("close_stream")
        return streams.close_stream(key)

    def read_stream(
        self,
        workflow_id: str,
        key: str,
        *,
        offset: int = 0,
        timeout_seconds: float | None = None,
        polling_interval_sec: float | None = None,
    ) -> AsyncIterator[Any]:
        """``async for value in dbos.read_stream(id, key)``: values in order until the end.

        The end is the stream's close, or its writer finishing with every value read. A
        missing workflow raises :class:`~dbos_trio.DBOSNonExistentWorkflowError`. From a
        workflow body each value is a ``DBOS.readStream`` checkpoint (a replay yields the
        same values). Cancelling the loop loses nothing: read again from the start.

        Reading starts at ``offset``; waiting longer than ``timeout_seconds`` for one
        value raises :class:`~dbos_trio.DBOSStreamTimeoutError`. While it waits the stream
        is re-read every ``polling_interval_sec`` (default: the backend's re-check
        interval), and at once when a notification says it grew.
        """
        return messages.read_stream(
            self._reach,
            workflow_id,
            key,
            offset=offset,
            timeout_seconds=timeout_seconds,
            polling_interval_sec=polling_interval_sec,
        )
