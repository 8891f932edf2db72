"""Handles, management and listings, as methods of :class:`~dbos_trio.Client`.

The workflow operations are :mod:`dbos_trio._ops`' (validated there, once, for every
face); a method here only names the client's way in (``self._reach``, never
checkpointed) and wraps ids in client handles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._engine.durable import waits
from dbos_trio._engine.workflows.handle import unique_handles
from dbos_trio._engine.workflows.status import StepInfo, WorkflowStatus
from dbos_trio._ops import inspect, manage


class ClientManagement(ClientBase):
    # --- handles and management ------------------------------------------------------

    async def retrieve_workflow(self, workflow_id: str) -> ClientWorkflowHandle[Any]:
        """A handle on an existing workflow (one read, to check that it exists).

        Raises :class:`~dbos_trio.DBOSNonExistentWorkflowError` if no workflow has the id.
        Cancellation raises ``trio.Cancelled`` and writes nothing; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries (``database_retry_limit``).
        """
        return self._handle(await inspect.retrieve_workflow(self._reach, workflow_id))

    async def get_workflow_status(self, workflow_id: str) -> WorkflowStatus | None:
        """The workflow's status row, decoded; None if there is no such workflow.

        A payload this process cannot decode is returned as its stored string. One read:
        cancellation raises ``trio.Cancelled``; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        return await inspect.get_workflow_status(self._reach, workflow_id)

    async def cancel_workflow(self, workflow_id: str, *, cancel_children: bool = False) -> None:
        """Cancel an unfinished workflow; it stops at its next checkpoint wherever it runs."""
        await manage.cancel_workflow(self._reach, workflow_id, cancel_children=cancel_children)

    async def cancel_workflows(
        self, workflow_ids: Sequence[str], *, cancel_children: bool = False
    ) -> None:
        """Cancel every listed workflow that is not finished (and, with
        ``cancel_children``, their descendants, one generation per statement).

        Each one stops at its next checkpoint wherever it runs; finished or missing ids are
        left alone. Cancelling the call (``trio.Cancelled``) may leave a later generation
        of children uncancelled: call again, it is idempotent. A database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        await manage.cancel_workflows(self._reach, workflow_ids, cancel_children=cancel_children)

    async def resume_workflow(
        self, workflow_id: str, *, queue_name: str | None = None
    ) -> ClientWorkflowHandle[Any]:
        """Re-enqueue an unfinished workflow (on ``queue_name`` or the internal queue)."""
        return self._handle(
            await manage.resume_workflow(self._reach, workflow_id, queue_name=queue_name)
        )

    async def pause_workflow(self, workflow_id: str) -> bool:
        """Pause an unfinished workflow, durably: no executor runs it until
        :meth:`unpause_workflow`; running, it stops before its next step (within its
        executor's cancel-watch interval). True if this call paused it, False if it was
        already paused. A finished workflow raises :class:`~dbos_trio.DBOSException`, a
        missing one :class:`~dbos_trio.DBOSNonExistentWorkflowError`, nothing changed.
        One statement: cancelled, it happened or not."""
        return await manage.pause_workflow(self._reach, workflow_id)

    async def unpause_workflow(self, workflow_id: str) -> bool:
        """Let a paused workflow run again from its first step not recorded, on its own
        queue (or the internal one). True if this call unpaused it, False if it was not
        paused; errors as :meth:`pause_workflow`."""
        return await manage.unpause_workflow(self._reach, workflow_id)

    async def resume_workflows(
        self, workflow_ids: Sequence[str], *, queue_name: str | None = None
    ) -> list[ClientWorkflowHandle[Any]]:
        """Re-enqueue unfinished workflows (recovery attempts reset) on ``queue_name``
        or the internal queue; they continue after their last checkpoint.

        Raises :class:`~dbos_trio.DBOSNonExistentWorkflowError` naming the first id that
        does not exist, before any is resumed; the rest is one statement, so a cancelled
        call (``trio.Cancelled``) resumed all of them or none. A database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        ids = await manage.resume_workflows(self._reach, workflow_ids, queue_name=queue_name)
        return [self._handle(workflow_id) for workflow_id in ids]

    async def delete_workflow(self, workflow_id: str, *, delete_children: bool = False) -> None:
        """Delete the workflow's rows (and with ``delete_children``, its descendants').

        One statement: a cancelled call (``trio.Cancelled``) deleted everything or nothing;
        a missing id is not an error. A database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        await manage.delete_workflow(self._reach, workflow_id, delete_children=delete_children)

    async def delete_workflows(
        self, workflow_ids: Sequence[str], *, delete_children: bool = False
    ) -> None:
        """Delete the listed workflows' rows (and with ``delete_children``, their
        descendants'): status, inputs, steps, messages, events and streams.

        One transaction: a cancelled call (``trio.Cancelled``) deleted everything or
        nothing; missing ids are ignored. A bad id raises
        :class:`~dbos_trio.DBOSInvalidArgumentError` before anything is deleted; a
        database failure raises :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        await manage.delete_workflows(self._reach, workflow_ids, delete_children=delete_children)

    async def set_workflow_delay(
        self,
        workflow_id: str,
        *,
        delay_seconds: float | None = None,
        delay_until_epoch_ms: int | None = None,
    ) -> None:
        """Move a DELAYED workflow's start to ``delay_seconds`` from now, or to
        ``delay_until_epoch_ms`` (exactly one of them); other workflows are left alone."""
        await manage.set_workflow_delay(
            self._reach,
            workflow_id,
            delay_seconds=delay_seconds,
            delay_until_epoch_ms=delay_until_epoch_ms,
        )

    async def fork_workflow(
        self,
        workflow_id: str,
        start_step: int,
        *,
        application_version: str | None = None,
        queue_name: str | None = None,
        queue_partition_key: str | None = None,
        timeout_seconds: float | None = None,
        replacement_children: dict[str, str] | None = None,
    ) -> ClientWorkflowHandle[Any]:
        """A new workflow that replays ``workflow_id``'s steps before ``start_step`` and
        re-runs the rest, enqueued on ``queue_name`` (default: the internal queue). Its id
        comes from an enclosing ``SetWorkflowID``, else it is fresh; its copied checkpoints
        refer to ``replacement_children[id]`` instead of each child ``id``."""
        forked = await manage.fork_workflow(
            self._reach,
            workflow_id,
            start_step,
            application_version=application_version,
            queue_name=queue_name,
            queue_partition_key=queue_partition_key,
            timeout_seconds=timeout_seconds,
            replacement_children=replacement_children,
        )
        return self._handle(forked)

    async def retry_workflow(
        self,
        workflow_id: str,
        *,
        application_version: str | None = None,
        queue_name: str | None = None,
    ) -> ClientWorkflowHandle[Any]:
        """Run a failed (ERROR) workflow again from its first failed step, on
        ``application_version`` (default: the application's latest, where the fixed code
        runs): a fork replaying the steps before it. The new workflow's handle. A workflow
        that is not ERROR raises :class:`~dbos_trio.DBOSException` saying what fits instead;
        a missing one :class:`~dbos_trio.DBOSNonExistentWorkflowError`. Cancellation: one
        transaction, done or not; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries."""
        retried = await manage.retry_workflow(
            self._reach,
            workflow_id,
            application_version=application_version,
            queue_name=queue_name,
        )
        return self._handle(retried)

    async def wait_first(
        self, handles: Sequence[ClientWorkflowHandle[Any]]
    ) -> ClientWorkflowHandle[Any]:
        """The first of ``handles`` whose workflow is no longer PENDING/ENQUEUED/DELAYED.

        Workflows finishing in a process this client shares a wakeup registry with wake it
        at once; others are found by polling every ``outcome_poll_interval``."""
        runtime = self._require("wait_first")
        by_id: dict[str, ClientWorkflowHandle[Any]] = unique_handles(handles)
        return by_id[await waits.first_finished(runtime, list(by_id))]

    # --- listing ---------------------------------------------------------------------

    # list_workflows and list_queued_workflows, with their typed filters: client/listing.py

    async def list_workflow_steps(
        self,
        workflow_id: str,
        *,
        load_output: bool = True,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[StepInfo]:
        """The workflow's recorded steps in step-id order."""
        return await inspect.list_workflow_steps(
            self._reach, workflow_id, load_output=load_output, limit=limit, offset=offset
        )
