"""Queues, introspection and management, as methods of ``DBOS``.

Called from a workflow body, each management call is itself a checkpoint with the
cross-SDK step name (``DBOS.listWorkflows``, ``DBOS.cancelWorkflow``, ...), its step id
reserved at the call: a replay returns the recorded answer instead of asking again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from .._queue import Queue
from .._registry import resolve_workflow
from ..core import validate
from ..core.filters import normalize_filters
from ..engine import fork, management, queues
from ..engine.checkpoint import as_step
from ..engine.handle import WorkflowHandle, handle_for
from ..engine.status import StepInfo, WorkflowStatus, step_info, workflow_status
from ..sysdb.records import WorkflowFilters
from .base import DBOSBase

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

    def list_queued_workflows(self, **filters: Any) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        """Queued workflows (DELAYED, ENQUEUED, PENDING on a queue) unless filtered otherwise."""
        filters.setdefault("status", ["DELAYED", "ENQUEUED", "PENDING"])
        filters["queues_only"] = True
        return self._list_workflows("list_queued_workflows", "DBOS.listQueuedWorkflows", filters)

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
        validate.text(workflow_id, "workflow_id")
        executor = self._require_executor("get_workflow_status")

        async def read() -> WorkflowStatus | None:
            row = await executor.sysdb.get_workflow(workflow_id)
            return None if row is None else workflow_status(executor.codec, row)

        return as_step("DBOS.getStatus", read)

    def list_workflow_steps(self, workflow_id: str) -> Coroutine[Any, Any, list[StepInfo]]:
        """The workflow's recorded steps, in step-id order."""
        validate.text(workflow_id, "workflow_id")
        executor = self._require_executor("list_workflow_steps")

        async def read() -> list[StepInfo]:
            steps = await executor.sysdb.list_steps(workflow_id)
            return [step_info(executor.codec, workflow_id, step) for step in steps]

        return as_step("DBOS.listWorkflowSteps", read)

    def list_workflows(self, **filters: Any) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        """This application's workflows (and unclaimed ones) matching the ``dbos`` 3.4
        filters, oldest first.

        Only rows whose ``application_name`` is this app's (or empty) are listed; the CLI
        lists every application's, and so does
        :meth:`Client.list_workflows <dbos_trio.Client.list_workflows>` of a client with
        no ``app_name``. Filters are the official SDK's keyword arguments (``status``,
        ``name``, ``start_time``, ``limit``, ``sort_desc``, ...); an unknown one raises
        :class:`~dbos_trio.DBOSException` and a bad value
        :class:`~dbos_trio.DBOSInvalidArgumentError`, before anything is read. From a
        workflow body the answer is a ``DBOS.listWorkflows`` checkpoint. Cancellation
        raises ``trio.Cancelled`` and records nothing; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        return self._list_workflows("list_workflows", "DBOS.listWorkflows", filters)

    def _list_workflows(
        self, operation: str, step_name: str, filters: dict[str, Any]
    ) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        executor = self._require_executor(operation)
        query = WorkflowFilters(scope_application=executor.app_name, **normalize_filters(filters))

        async def read() -> list[WorkflowStatus]:
            rows = await executor.sysdb.list_workflows(query)
            return [workflow_status(executor.codec, row) for row in rows]

        return as_step(step_name, read)

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
        validate.text(workflow_id, "workflow_id")
        validate.boolean(cancel_children, "cancel_children")
        executor = self._require_executor("cancel_workflow")

        async def cancel() -> None:
            await management.cancel_workflows(
                executor, [workflow_id], cancel_children=cancel_children
            )

        return as_step("DBOS.cancelWorkflow", cancel)

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
        validate.text(workflow_id, "workflow_id")
        validate.optional_text(queue_name, "queue_name")
        executor = self._require_executor("resume_workflow")

        async def resume() -> None:
            await management.resume_workflows(executor, [workflow_id], queue_name=queue_name)

        checkpointed = as_step("DBOS.resumeWorkflow", resume)

        async def resumed() -> WorkflowHandle[Any]:
            await checkpointed
            return handle_for(executor, workflow_id)

        return resumed()

    def fork_workflow(
        self,
        workflow_id: str,
        start_step: int,
        *,
        application_version: str | None = None,
        queue_name: str | None = None,
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """A new workflow that replays the steps before ``start_step`` and re-runs the rest.

        The original's recorded steps before ``start_step`` are copied to the new one, which
        is enqueued (on ``queue_name``, else the internal queue) under an enclosing
        ``SetWorkflowID``'s id or a fresh one. A missing original raises
        :class:`~dbos_trio.DBOSNonExistentWorkflowError`. The copy and the new row are one
        transaction: a cancelled call forked or did not. From a workflow body the call is a
        checkpoint (a replay returns the same fork).
        """
        validate.text(workflow_id, "workflow_id")
        validate.integer(start_step, "start_step", low=1, high=validate.INT32_MAX)
        validate.optional_text(application_version, "application_version")
        validate.optional_text(queue_name, "queue_name")
        executor = self._require_executor("fork_workflow")

        async def create() -> str:
            return await fork.fork_workflow(
                executor,
                workflow_id,
                start_step,
                application_version=application_version,
                queue_name=queue_name,
            )

        checkpointed = as_step("DBOS.forkWorkflow", create)

        async def forked() -> WorkflowHandle[Any]:
            return handle_for(executor, await checkpointed)

        return forked()

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
        validate.text(workflow_id, "workflow_id")
        validate.boolean(delete_children, "delete_children")
        executor = self._require_executor("delete_workflow")

        async def delete() -> None:
            await management.delete_workflows(
                executor, [workflow_id], delete_children=delete_children
            )

        return as_step("DBOS.deleteWorkflow", delete)

    def set_workflow_delay(
        self, workflow_id: str, *, delay_seconds: float
    ) -> Coroutine[Any, Any, None]:
        """Move a DELAYED workflow's start to ``delay_seconds`` from now."""
        validate.text(workflow_id, "workflow_id")
        validate.seconds(delay_seconds, "delay_seconds")
        executor = self._require_executor("set_workflow_delay")

        async def delay() -> None:
            await management.set_workflow_delay(executor, workflow_id, delay_seconds)

        return as_step("DBOS.setWorkflowDelay", delay)
