"""Queues, introspection and management, as methods of ``DBOS``.

Called from a workflow body, each management call is itself a checkpoint with the
cross-SDK step name (``DBOS.listWorkflows``, ``DBOS.cancelWorkflow``, ...), its step id
reserved at the call: a replay returns the recorded answer instead of asking again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from dbos_trio._core import validate
from dbos_trio._core.filters import normalize_filters
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.admin import fork, management
from dbos_trio._engine.queues import enqueue as queues
from dbos_trio._engine.workflows.checkpoint import as_step
from dbos_trio._engine.workflows.handle import WorkflowHandle, handle_for
from dbos_trio._engine.workflows.options import take_assigned_id
from dbos_trio._engine.workflows.status import StepInfo, WorkflowStatus, step_info, workflow_status
from dbos_trio._queue import Queue
from dbos_trio._registry import resolve_workflow
from dbos_trio._sysdb.records import WorkflowFilters

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
        validate.text(workflow_id, "workflow_id")
        executor = self._require_executor("get_workflow_status")

        async def read() -> WorkflowStatus | None:
            row = await executor.sysdb.get_workflow(workflow_id)
            return None if row is None else workflow_status(executor.codec, row)

        return as_step("DBOS.getStatus", read)

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
        validate.text(workflow_id, "workflow_id")
        validate.boolean(load_output, "load_output")
        validate.optional_integer(limit, "limit", low=0)
        validate.optional_integer(offset, "offset", low=0)
        executor = self._require_executor("list_workflow_steps")

        async def read() -> list[StepInfo]:
            steps = await executor.sysdb.list_steps(workflow_id, limit=limit, offset=offset)
            return [
                step_info(executor.codec, workflow_id, step, load_output=load_output)
                for step in steps
            ]

        return as_step("DBOS.listWorkflowSteps", read)

    # list_workflows and list_queued_workflows, with their typed filters: _dbos/listing.py

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
        validate.text(workflow_id, "workflow_id")
        validate.integer(start_step, "start_step", low=1, high=validate.INT32_MAX)
        validate.optional_text(application_version, "application_version")
        validate.optional_text(queue_name, "queue_name")
        validate.optional_text(queue_partition_key, "queue_partition_key")
        validate.optional_seconds(timeout_seconds, "timeout_seconds", positive=True)
        replacements = fork.check_replacement_children(replacement_children)
        executor = self._require_executor("fork_workflow")
        # The id and the timeout are the caller's at the call, like any start's.
        forked_id = take_assigned_id()

        async def create() -> str:
            return await fork.fork_workflow(
                executor,
                workflow_id,
                start_step,
                application_version=application_version,
                queue_name=queue_name,
                queue_partition_key=queue_partition_key,
                replacement_children=replacements,
                forked_id=forked_id,
                timeout_seconds=timeout_seconds,
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
