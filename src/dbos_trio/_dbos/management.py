"""Queues, introspection and management, as methods of ``DBOS``.

Called from a workflow body, each management call is itself a checkpoint with the
cross-SDK step name (``DBOS.listWorkflows``, ``DBOS.cancelWorkflow``, ...), its step id
reserved at the call: a replay returns the recorded answer instead of asking again. The
workflow operations are :mod:`dbos_trio._ops`' (validated there, once, for every face);
a method here only names its face's way in (``self._reach``) and wraps ids in handles.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from dbos_trio._core import validate
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.queues import enqueue as queues
from dbos_trio._engine.workflows.handle import WorkflowHandle
from dbos_trio._engine.workflows.status import StepInfo, WorkflowStatus
from dbos_trio._ops import inspect, manage
from dbos_trio._queue import Queue
from dbos_trio._registry import resolve_workflow

P = ParamSpec("P")
R = TypeVar("R")


class Management(DBOSBase):
    # --- queues ------------------------------------------------------------------------

    def enqueue_workflow(
        self, queue_name: str, fn: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, WorkflowHandle[R]]:
        """Enqueue ``fn`` on ``queue_name`` (declared or not: an unknown queue's row waits).

        Not async: from a workflow body the step id is taken at the call.
        """
        validate.text(queue_name, "queue_name")
        executor = self._require_executor(f"enqueueing on queue {queue_name!r}")
        registered, call_args = resolve_workflow(fn, args)
        return queues.enqueue(
            executor,
            queue_name,
            registered,
            call_args,
            dict(kwargs),
            config=self._queues.get(queue_name),
        )

    async def list_queues(self) -> list[Queue]:
        """The queues of this application (and unclaimed ones), as stored.

        One read. Cancellation raises ``trio.Cancelled`` and nothing changes; a database
        failure is retried as every system-database call is (``Config.database_retry_limit``)
        and then raises :class:`~dbos_trio.SystemDatabaseError`. Before launch:
        :class:`~dbos_trio.DBOSNotLaunchedError`.
        """
        executor = self._require_executor("list_queues")
        stored = await executor.sysdb.list_queues(self.app_name)
        return [Queue(self._slot, config) for config in stored]

    async def retrieve_queue(self, name: str) -> Queue | None:
        """The stored queue called ``name``, or None if no queue has that name.

        One read, as :meth:`list_queues` (cancellation changes nothing; a database failure
        raises :class:`~dbos_trio.SystemDatabaseError` after the retries). A ``name`` that
        is not a storable string raises :class:`~dbos_trio.DBOSInvalidArgumentError` first.
        """
        validate.text(name, "name")
        executor = self._require_executor("retrieve_queue")
        config = await executor.sysdb.get_queue(name)
        return None if config is None else Queue(self._slot, config)

    async def delete_queue(self, name: str) -> None:
        """Delete the queue's row; its waiting workflows stay ENQUEUED until it returns."""
        validate.text(name, "name")
        executor = self._require_executor("delete_queue")
        await executor.sysdb.delete_queue(name)

    # --- introspection -----------------------------------------------------------------

    def get_workflow_status(self, workflow_id: str) -> Coroutine[Any, Any, WorkflowStatus | None]:
        """The workflow's status row, decoded; None if there is no such workflow.

        A payload this process cannot decode (a class it lacks, a pickle refused with
        ``allow_pickle=False``) is returned as its stored string, not raised. From a
        workflow body the answer is a ``DBOS.getStatus`` checkpoint (a replay returns it
        again); its step id is taken at the call, so this is not ``async`` but returns the
        coroutine to await. Cancellation raises ``trio.Cancelled`` and records nothing (a
        replay asks again); a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        return inspect.get_workflow_status(self._reach, workflow_id)

    def list_workflow_steps(
        self,
        workflow_id: str,
        *,
        load_output: bool = True,
        limit: int | None = None,
        offset: int | None = None,
    ) -> Coroutine[Any, Any, list[StepInfo]]:
        """The workflow's recorded steps, in step-id order (``limit``/``offset`` page
        them; ``load_output=False`` leaves outputs and errors undecoded, as None)."""
        return inspect.list_workflow_steps(
            self._reach, workflow_id, load_output=load_output, limit=limit, offset=offset
        )

    # list_workflows and list_queued_workflows, with their typed filters: _dbos/listing.py

    # --- management --------------------------------------------------------------------

    def cancel_workflow(
        self, workflow_id: str, *, cancel_children: bool = False
    ) -> Coroutine[Any, Any, None]:
        """Cancel a workflow; one running here stops at once, elsewhere at its next checkpoint.

        The row becomes CANCELLED (a finished or missing workflow is left alone); with
        ``cancel_children`` its descendants too, one generation per statement, so a
        cancelled call may leave later generations running (call again: it is
        idempotent). Its awaiters get :class:`~dbos_trio.DBOSAwaitedWorkflowCancelledError`.
        From a workflow body the call is a ``DBOS.cancelWorkflow`` checkpoint.
        """
        return manage.cancel_workflow(self._reach, workflow_id, cancel_children=cancel_children)

    def resume_workflow(
        self, workflow_id: str, *, queue_name: str | None = None
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """Re-enqueue an unfinished workflow; it continues after its last checkpoint.

        Any status but SUCCESS and ERROR is resumed (CANCELLED and dead-lettered ones
        included; recovery attempts reset), on ``queue_name`` or the internal queue. A
        missing id raises :class:`~dbos_trio.DBOSNonExistentWorkflowError`. One statement:
        a cancelled call resumed it or did not. From a workflow body the call is a
        ``DBOS.resumeWorkflow`` checkpoint.
        """
        return self._handled(
            manage.resume_workflow(self._reach, workflow_id, queue_name=queue_name)
        )

    def fork_workflow(
        self,
        workflow_id: str,
        start_step: int,
        *,
        application_version: str | None = None,
        queue_name: str | None = None,
        queue_partition_key: str | None = None,
        timeout_seconds: float | None = None,
        replacement_children: dict[str, str] | None = None,
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """A new workflow that replays the steps before ``start_step`` and re-runs the rest.

        The original's recorded steps before ``start_step`` are copied to the new one, which
        is enqueued (on ``queue_name``, else the internal queue) under an enclosing
        ``SetWorkflowID``'s id or a fresh one. A missing original raises
        :class:`~dbos_trio.DBOSNonExistentWorkflowError`. The copy and the new row are one
        transaction: a cancelled call forked or did not. From a workflow body the call is a
        checkpoint (a replay returns the same fork).

        ``queue_partition_key`` and ``timeout_seconds`` apply to the fork, and its copied
        checkpoints refer to ``replacement_children[id]`` instead of each child ``id``.
        """
        return self._handled(
            manage.fork_workflow(
                self._reach,
                workflow_id,
                start_step,
                application_version=application_version,
                queue_name=queue_name,
                queue_partition_key=queue_partition_key,
                timeout_seconds=timeout_seconds,
                replacement_children=replacement_children,
            )
        )

    def retry_workflow(
        self,
        workflow_id: str,
        *,
        application_version: str | None = None,
        queue_name: str | None = None,
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """Run a failed (ERROR) workflow again from its first failed step, with the code
        the application runs now: a fork replaying the steps before that one, on
        ``application_version`` (default: the latest) and ``queue_name`` (default: the
        internal queue). The handle of the new workflow; the original keeps its record.

        The fix loop: read why it failed (``dbos-trio workflow get ID``), fix the code,
        deploy, retry. ``resume`` is not that: it replays the recorded failure. A workflow
        that is not ERROR raises :class:`~dbos_trio.DBOSException` saying what fits
        (``resume`` for a cancelled or parked one); a missing one
        :class:`~dbos_trio.DBOSNonExistentWorkflowError`. One transaction, as
        :meth:`fork_workflow`; from a workflow body, a checkpoint.
        """
        return self._handled(
            manage.retry_workflow(
                self._reach,
                workflow_id,
                application_version=application_version,
                queue_name=queue_name,
            )
        )

    def delete_workflow(
        self, workflow_id: str, *, delete_children: bool = False
    ) -> Coroutine[Any, Any, None]:
        """Delete the workflow's rows (and with ``delete_children``, its descendants').

        Its status, inputs, steps, messages, events and streams go in one statement: a
        cancelled call (``trio.Cancelled``) has deleted all of them or none. Deleting a
        workflow that does not exist does nothing. From a workflow body the call is a
        ``DBOS.deleteWorkflow`` checkpoint. A database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        return manage.delete_workflow(self._reach, workflow_id, delete_children=delete_children)

    def set_workflow_delay(
        self,
        workflow_id: str,
        *,
        delay_seconds: float | None = None,
        delay_until_epoch_ms: int | None = None,
    ) -> Coroutine[Any, Any, None]:
        """Move a DELAYED workflow's start to ``delay_seconds`` from now, or to
        ``delay_until_epoch_ms`` (exactly one of them, else
        :class:`~dbos_trio.DBOSInvalidArgumentError` at the call); other workflows are left
        alone. From a workflow body the call is a ``DBOS.setWorkflowDelay`` checkpoint."""
        return manage.set_workflow_delay(
            self._reach,
            workflow_id,
            delay_seconds=delay_seconds,
            delay_until_epoch_ms=delay_until_epoch_ms,
        )
