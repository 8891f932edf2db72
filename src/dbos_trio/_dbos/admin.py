"""Attributes, rewind, pause and the bulk operator calls, as methods of ``DBOS``.

Like the other management calls, each is a checkpoint with the cross-SDK step name when
called from a workflow body (``DBOS.updateWorkflowAttributes``, ``DBOS.rewindWorkflow``,
``DBOS.cancelWorkflow``, ...), its step id reserved at the call, so a replay returns the
recorded answer instead of acting again. Arguments are checked at the call, before
anything is written, by the shared operations (:mod:`dbos_trio._ops.manage`).
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any

from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.workflows.handle import WorkflowHandle
from dbos_trio._ops import manage
from dbos_trio._ops import queues as queue_ops


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
        return manage.update_workflow_attributes(self._reach, workflow_id, attributes, merge=merge)

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
        return self._handled(
            manage.rewind_workflow(
                self._reach,
                workflow_id,
                start_step=start_step,
                application_version=application_version,
                queue_name=queue_name,
                queue_partition_key=queue_partition_key,
            )
        )

    # --- pause ----------------------------------------------------------------------

    def pause_workflow(self, workflow_id: str) -> Coroutine[Any, Any, bool]:
        """Pause an unfinished workflow, durably: no executor runs it until
        :meth:`unpause_workflow`, restarts included, and it shows as PAUSED. Running, it
        finishes and records the step it is in and stops before the next (here at once,
        elsewhere within the cancel watcher's interval), freeing its queue slot; its
        waiters keep waiting. True if this call paused it, False if it was already paused.
        A finished workflow raises :class:`~dbos_trio.DBOSException`, a missing one
        :class:`~dbos_trio.DBOSNonExistentWorkflowError`, and nothing changes. One
        statement: cancelled, it happened or not."""
        return manage.pause_workflow(self._reach, workflow_id)

    def unpause_workflow(self, workflow_id: str) -> Coroutine[Any, Any, bool]:
        """Let a paused workflow run again: back on its own queue (or the internal one),
        it runs on from its first step not recorded (a step paused by
        ``on_exhausted="pause"`` runs again). True if this call unpaused it, False if it
        was not paused (nothing changed); errors as :meth:`pause_workflow`."""
        return manage.unpause_workflow(self._reach, workflow_id)

    def pause_queue(self, name: str) -> Coroutine[Any, Any, bool]:
        """Stop every executor's claims from queue ``name``, durably (a restart, or the
        queue registered again at launch, keeps it paused); running workflows go on. True
        if this call paused it, False if it was already paused. A queue with no stored
        row (or the internal queue) raises :class:`~dbos_trio.DBOSException`. Never
        checkpointed."""
        return queue_ops.pause_queue(self._reach, name)

    def unpause_queue(self, name: str) -> Coroutine[Any, Any, bool]:
        """Let executors claim from queue ``name`` again, with the global concurrency it
        had; True if this call unpaused it, False if it was not paused. Errors as
        :meth:`pause_queue`."""
        return queue_ops.unpause_queue(self._reach, name)

    # --- bulk forms ------------------------------------------------------------------

    def cancel_workflows(
        self, workflow_ids: Sequence[str], *, cancel_children: bool = False
    ) -> Coroutine[Any, Any, None]:
        """Cancel every listed workflow that is not finished (one write per level of
        children with ``cancel_children``); one running here stops at once."""
        return manage.cancel_workflows(self._reach, workflow_ids, cancel_children=cancel_children)

    def resume_workflows(
        self, workflow_ids: Sequence[str], *, queue_name: str | None = None
    ) -> Coroutine[Any, Any, list[WorkflowHandle[Any]]]:
        """Re-enqueue every listed unfinished workflow (one write); a missing id raises
        :class:`~dbos_trio.DBOSNonExistentWorkflowError` before any is resumed."""
        return self._handles(
            manage.resume_workflows(self._reach, workflow_ids, queue_name=queue_name)
        )

    def delete_workflows(
        self, workflow_ids: Sequence[str], *, delete_children: bool = False
    ) -> Coroutine[Any, Any, None]:
        """Delete the listed workflows' rows (one transaction; missing ids are ignored)."""
        return manage.delete_workflows(self._reach, workflow_ids, delete_children=delete_children)
