"""Attributes, rewind and the bulk operator calls, as methods of ``DBOS``.

Like the other management calls, each is a checkpoint with the cross-SDK step name when
called from a workflow body (``DBOS.updateWorkflowAttributes``, ``DBOS.rewindWorkflow``,
``DBOS.cancelWorkflow``, ...), its step id reserved at the call, so a replay returns the
recorded answer instead of acting again. Arguments are checked at the call, before
anything is written.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core import validate
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.admin import edit as admin
from dbos_trio._engine.admin import management
from dbos_trio._engine.workflows.checkpoint import as_step
from dbos_trio._engine.workflows.handle import WorkflowHandle, handle_for
from dbos_trio.errors import DBOSException


class Admin(DBOSBase):
    def update_workflow_attributes(
        self, workflow_id: str, attributes: dict[str, Any] | None, *, merge: bool = False
    ) -> Coroutine[Any, Any, None]:
        """Replace the workflow's attributes (None clears them) or, with ``merge=True``,
        set the given top-level keys and keep the others. A missing workflow is left
        alone. Raises :class:`~dbos_trio.DBOSArgumentTypeError` for a value JSON cannot
        hold and :class:`~dbos_trio.DBOSException` for ``merge`` with None, before
        anything is written. Cancelled while the update runs: it committed whole or not
        at all."""
        validate.text(workflow_id, "workflow_id")
        validate.boolean(merge, "merge")
        if merge and attributes is None:
            raise DBOSException("Cannot merge None into workflow attributes")
        encoded = attributes_rules.optional(attributes, "attributes")
        executor = self._require_executor("update_workflow_attributes")

        async def update() -> None:
            await admin.update_workflow_attributes(executor, workflow_id, encoded, merge=merge)

        return as_step("DBOS.updateWorkflowAttributes", update)

    def rewind_workflow(
        self,
        workflow_id: str,
        *,
        start_step: int | None = None,
        application_version: str | None = None,
        queue_name: str | None = None,
        queue_partition_key: str | None = None,
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """Re-run a finished workflow under the same id from ``start_step`` (default 1):
        its checkpoints, event history and the messages it consumed from that step on
        are discarded, events roll back to their earlier values, and it is enqueued on
        ``queue_name`` (default: the internal queue). Only a workflow in a terminal state
        (SUCCESS, ERROR, CANCELLED, MAX_RECOVERY_ATTEMPTS_EXCEEDED) can be rewound; an
        active one raises :class:`~dbos_trio.DBOSException`, a missing one
        :class:`~dbos_trio.DBOSNonExistentWorkflowError`; either way nothing changed."""
        validate.text(workflow_id, "workflow_id")
        step = 1 if start_step is None else start_step
        validate.integer(step, "start_step", low=1, high=validate.INT32_MAX)
        validate.optional_text(application_version, "application_version")
        validate.optional_text(queue_name, "queue_name")
        validate.optional_text(queue_partition_key, "queue_partition_key")
        executor = self._require_executor("rewind_workflow")

        async def rewind() -> None:
            await admin.rewind_workflow(
                executor,
                workflow_id,
                step,
                application_version=application_version,
                queue_name=queue_name,
                queue_partition_key=queue_partition_key,
            )

        checkpointed = as_step("DBOS.rewindWorkflow", rewind)

        async def rewound() -> WorkflowHandle[Any]:
            await checkpointed
            return handle_for(executor, workflow_id)

        return rewound()

    # --- bulk forms ------------------------------------------------------------------

    def cancel_workflows(
        self, workflow_ids: Sequence[str], *, cancel_children: bool = False
    ) -> Coroutine[Any, Any, None]:
        """Cancel every listed workflow that is not finished (one write per level of
        children with ``cancel_children``); one running here stops at once."""
        ids = validate.texts(workflow_ids, "workflow_ids")
        validate.boolean(cancel_children, "cancel_children")
        executor = self._require_executor("cancel_workflows")

        async def cancel() -> None:
            await management.cancel_workflows(executor, ids, cancel_children=cancel_children)

        return as_step("DBOS.cancelWorkflow", cancel)

    def resume_workflows(
        self, workflow_ids: Sequence[str], *, queue_name: str | None = None
    ) -> Coroutine[Any, Any, list[WorkflowHandle[Any]]]:
        """Re-enqueue every listed unfinished workflow (one write); a missing id raises
        :class:`~dbos_trio.DBOSNonExistentWorkflowError` before any is resumed."""
        ids = validate.texts(workflow_ids, "workflow_ids")
        validate.optional_text(queue_name, "queue_name")
        executor = self._require_executor("resume_workflows")

        async def resume() -> None:
            await management.resume_workflows(executor, ids, queue_name=queue_name)

        checkpointed = as_step("DBOS.resumeWorkflow", resume)

        async def resumed() -> list[WorkflowHandle[Any]]:
            await checkpointed
            return [handle_for(executor, workflow_id) for workflow_id in ids]

        return resumed()

    def delete_workflows(
        self, workflow_ids: Sequence[str], *, delete_children: bool = False
    ) -> Coroutine[Any, Any, None]:
        """Delete the listed workflows' rows (one transaction; missing ids are ignored)."""
        ids = validate.texts(workflow_ids, "workflow_ids")
        validate.boolean(delete_children, "delete_children")
        executor = self._require_executor("delete_workflows")

        async def delete() -> None:
            await management.delete_workflows(executor, ids, delete_children=delete_children)

        return as_step("DBOS.deleteWorkflow", delete)
