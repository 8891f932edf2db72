"""Handles, management and listings, as methods of :class:`~dbos_trio.Client`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._core import validate
from dbos_trio._core.filters import normalize_filters
from dbos_trio._engine.admin import fork, management
from dbos_trio._engine.durable import waits
from dbos_trio._engine.state import Runtime
from dbos_trio._engine.workflows.handle import unique_handles
from dbos_trio._engine.workflows.options import SetWorkflowTimeout
from dbos_trio._engine.workflows.status import StepInfo, WorkflowStatus, step_info, workflow_status
from dbos_trio._sysdb.records import WorkflowFilters
from dbos_trio.errors import DBOSException, DBOSInvalidArgumentError, DBOSNonExistentWorkflowError


class ClientManagement(ClientBase):
    # --- handles and management ------------------------------------------------------

    async def retrieve_workflow(self, workflow_id: str) -> ClientWorkflowHandle[Any]:
        """A handle on an existing workflow (one read, to check that it exists).

        Raises :class:`~dbos_trio.DBOSNonExistentWorkflowError` if no workflow has the id.
        Cancellation raises ``trio.Cancelled`` and writes nothing; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries (``database_retry_limit``).
        """
        validate.text(workflow_id, "workflow_id")
        runtime = self._require("retrieve_workflow")
        if await runtime.sysdb.get_outcome(workflow_id) is None:
            raise DBOSNonExistentWorkflowError("target", workflow_id)
        return self._handle(workflow_id)

    async def get_workflow_status(self, workflow_id: str) -> WorkflowStatus | None:
        """The workflow's status row, decoded; None if there is no such workflow.

        A payload this process cannot decode is returned as its stored string. One read:
        cancellation raises ``trio.Cancelled``; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        validate.text(workflow_id, "workflow_id")
        runtime = self._require("get_workflow_status")
        row = await runtime.sysdb.get_workflow(workflow_id)
        return None if row is None else workflow_status(runtime.codec, row)

    async def cancel_workflow(self, workflow_id: str, *, cancel_children: bool = False) -> None:
        """Cancel an unfinished workflow; it stops at its next checkpoint wherever it runs."""
        await self.cancel_workflows([workflow_id], cancel_children=cancel_children)

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
        workflow_ids = validate.texts(workflow_ids, "workflow_ids")
        validate.boolean(cancel_children, "cancel_children")
        runtime = self._require("cancel_workflows")
        await management.cancel_workflows(
            runtime, list(workflow_ids), cancel_children=cancel_children
        )

    async def resume_workflow(
        self, workflow_id: str, *, queue_name: str | None = None
    ) -> ClientWorkflowHandle[Any]:
        """Re-enqueue an unfinished workflow (on ``queue_name`` or the internal queue)."""
        return (await self.resume_workflows([workflow_id], queue_name=queue_name))[0]

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
        workflow_ids = validate.texts(workflow_ids, "workflow_ids")
        validate.optional_text(queue_name, "queue_name")
        runtime = self._require("resume_workflows")
        ids = list(workflow_ids)
        await management.resume_workflows(runtime, ids, queue_name=queue_name)
        return [self._handle(workflow_id) for workflow_id in ids]

    async def delete_workflow(self, workflow_id: str, *, delete_children: bool = False) -> None:
        """Delete the workflow's rows (and with ``delete_children``, its descendants').

        One statement: a cancelled call (``trio.Cancelled``) deleted everything or nothing;
        a missing id is not an error. A database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        validate.text(workflow_id, "workflow_id")
        validate.boolean(delete_children, "delete_children")
        runtime = self._require("delete_workflow")
        await management.delete_workflows(runtime, [workflow_id], delete_children=delete_children)

    async def set_workflow_delay(
        self,
        workflow_id: str,
        *,
        delay_seconds: float | None = None,
        delay_until_epoch_ms: int | None = None,
    ) -> None:
        """Move a DELAYED workflow's start to ``delay_seconds`` from now, or to
        ``delay_until_epoch_ms`` (exactly one of them); other workflows are left alone."""
        validate.text(workflow_id, "workflow_id")
        validate.optional_seconds(delay_seconds, "delay_seconds")
        validate.optional_integer(delay_until_epoch_ms, "delay_until_epoch_ms", low=0, high=2**62)
        runtime = self._require("set_workflow_delay")
        if (delay_seconds is None) == (delay_until_epoch_ms is None):
            raise DBOSInvalidArgumentError(
                "Specify either delay_seconds or delay_until_epoch_ms, not both"
            )
        if delay_seconds is not None:
            if delay_seconds < 0:
                raise DBOSException("delay_seconds must be >= 0")
            await management.set_workflow_delay(runtime, workflow_id, delay_seconds)
            return
        assert delay_until_epoch_ms is not None
        if delay_until_epoch_ms < 0:
            raise DBOSException("delay_until_epoch_ms must be >= 0")
        await runtime.sysdb.set_workflow_delay(
            workflow_id, delay_until_epoch_ms, runtime.clock.now_ms()
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
        validate.text(workflow_id, "workflow_id")
        validate.integer(start_step, "start_step", low=1, high=validate.INT32_MAX)
        validate.optional_text(application_version, "application_version")
        validate.optional_text(queue_name, "queue_name")
        validate.optional_text(queue_partition_key, "queue_partition_key")
        validate.optional_seconds(timeout_seconds, "timeout_seconds", positive=True)
        replacements = fork.check_replacement_children(replacement_children)
        runtime = self._require("fork_workflow")
        with SetWorkflowTimeout(timeout_seconds):
            forked_id = await fork.fork_workflow(
                runtime,
                workflow_id,
                start_step,
                application_version=application_version,
                queue_name=queue_name,
                queue_partition_key=queue_partition_key,
                replacement_children=replacements,
            )
        return self._handle(forked_id)

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
        validate.text(workflow_id, "workflow_id")
        validate.boolean(load_output, "load_output")
        validate.optional_integer(limit, "limit", low=0)
        validate.optional_integer(offset, "offset", low=0)
        runtime = self._require("list_workflow_steps")
        steps = await runtime.sysdb.list_steps(workflow_id, limit=limit, offset=offset)
        return [
            step_info(runtime.codec, workflow_id, step, load_output=load_output) for step in steps
        ]


def _client_filters(runtime: Runtime, filters: dict[str, Any]) -> WorkflowFilters:
    filters = dict(filters)
    application = filters.pop("application_name", None)
    normalized = normalize_filters(filters)
    if application is not None:
        names = [application] if isinstance(application, str) else list(application)
        if len(names) == 1:
            normalized["scope_application"] = names[0]
        elif names:
            normalized["application_names"] = tuple(names)
    elif runtime.app_name is not None and "workflow_ids" not in normalized:
        normalized["scope_application"] = runtime.app_name
    return WorkflowFilters(**normalized)
