"""The workflow actions every face shares: cancel, resume, pause, unpause, fork, retry,
rewind, delete, delay, attributes.

Each function validates every argument and asks the :class:`~.reach.Reach` for its runtime
at the call, then returns the coroutine that acts: a bad value (or a closed face) raises
before anything is written, and ``DBOS``'s step id is reserved in call order. Called from
a ``DBOS`` workflow body an action is checkpointed under the cross-SDK step name
(``DBOS.cancelWorkflow``, ...), recording what the official SDK records (None, or the
fork's id), so a replay does not act again; a client's actions are never recorded.

An action answers ids, not handles: each face wraps them in its own kind of handle.
Every action is one transaction (cancel with children: one per generation), so a
cancelled call (``trio.Cancelled``) did all of a transaction or none of it; a database
failure raises :class:`~dbos_trio.SystemDatabaseError` after the retries.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core import validate
from dbos_trio._core.statuses import CANCELLED, ERROR, MAX_RECOVERY_ATTEMPTS_EXCEEDED, SUCCESS
from dbos_trio._engine.admin import edit, fork, management, pausing
from dbos_trio._engine.workflows.options import take_assigned_id
from dbos_trio._ops.reach import Reach
from dbos_trio.errors import DBOSException, DBOSInvalidArgumentError, DBOSNonExistentWorkflowError

# Upper bound of an epoch-milliseconds argument (what the database column holds, with room).
MAX_EPOCH_MS = 2**62


def cancel_workflows(
    reach: Reach,
    workflow_ids: Sequence[str],
    *,
    cancel_children: bool = False,
    operation: str = "cancel_workflows",
) -> Coroutine[Any, Any, None]:
    """Cancel every listed workflow that is not finished (with ``cancel_children``, their
    descendants too, one generation per statement); one running in this process stops at
    once, elsewhere at its next checkpoint. Step name ``DBOS.cancelWorkflow``."""
    ids = validate.texts(workflow_ids, "workflow_ids")
    validate.boolean(cancel_children, "cancel_children")
    runtime = reach.runtime(operation)

    async def cancel() -> None:
        await management.cancel_workflows(runtime, ids, cancel_children=cancel_children)

    return reach.checkpoint("DBOS.cancelWorkflow", cancel)


def cancel_workflow(
    reach: Reach, workflow_id: str, *, cancel_children: bool = False
) -> Coroutine[Any, Any, None]:
    """:func:`cancel_workflows` of one id."""
    validate.text(workflow_id, "workflow_id")
    return cancel_workflows(
        reach, [workflow_id], cancel_children=cancel_children, operation="cancel_workflow"
    )


def resume_workflows(
    reach: Reach,
    workflow_ids: Sequence[str],
    *,
    queue_name: str | None = None,
    operation: str = "resume_workflows",
) -> Coroutine[Any, Any, list[str]]:
    """Re-enqueue every listed unfinished workflow (recovery attempts reset) on
    ``queue_name`` or the internal queue, in one statement; the ids, as given. A missing
    id raises :class:`~dbos_trio.DBOSNonExistentWorkflowError` before any is resumed.
    Step name ``DBOS.resumeWorkflow``."""
    ids = validate.texts(workflow_ids, "workflow_ids")
    validate.optional_text(queue_name, "queue_name")
    runtime = reach.runtime(operation)

    async def resume() -> None:
        await management.resume_workflows(runtime, ids, queue_name=queue_name)

    recorded = reach.checkpoint("DBOS.resumeWorkflow", resume)

    async def resumed() -> list[str]:
        await recorded
        return ids

    return resumed()


def resume_workflow(
    reach: Reach, workflow_id: str, *, queue_name: str | None = None
) -> Coroutine[Any, Any, str]:
    """:func:`resume_workflows` of one id; the id."""
    validate.text(workflow_id, "workflow_id")
    return _only(
        resume_workflows(reach, [workflow_id], queue_name=queue_name, operation="resume_workflow")
    )


async def _only(ids: Coroutine[Any, Any, list[str]]) -> str:
    (only,) = await ids
    return only


def pause_workflow(reach: Reach, workflow_id: str) -> Coroutine[Any, Any, bool]:
    """Pause an unfinished workflow, durably: nothing runs it until :func:`unpause_workflow`
    (restarts included); running, it finishes the step it is in and stops before the next.
    True if this call paused it, False if it was paused already. A finished workflow raises
    :class:`~dbos_trio.DBOSException`, a missing one
    :class:`~dbos_trio.DBOSNonExistentWorkflowError`, with nothing changed. Step name
    ``DBOS.pauseWorkflow``."""
    validate.text(workflow_id, "workflow_id")
    runtime = reach.runtime("pause_workflow")

    async def pause() -> bool:
        return await pausing.pause_workflow(runtime, workflow_id)

    return reach.checkpoint("DBOS.pauseWorkflow", pause)


def unpause_workflow(reach: Reach, workflow_id: str) -> Coroutine[Any, Any, bool]:
    """Let a paused workflow run again: back on its queue (or the internal queue), it runs
    on from its first step not recorded. True if this call unpaused it, False if it was not
    paused (nothing changed). A finished or missing workflow raises as
    :func:`pause_workflow` does. Step name ``DBOS.unpauseWorkflow``."""
    validate.text(workflow_id, "workflow_id")
    runtime = reach.runtime("unpause_workflow")

    async def unpause() -> bool:
        return await pausing.unpause_workflow(runtime, workflow_id)

    return reach.checkpoint("DBOS.unpauseWorkflow", unpause)


def fork_workflow(
    reach: Reach,
    workflow_id: str,
    start_step: int,
    *,
    application_version: str | None = None,
    queue_name: str | None = None,
    queue_partition_key: str | None = None,
    timeout_seconds: float | None = None,
    replacement_children: dict[str, str] | None = None,
    forked_id: str | None = None,
) -> Coroutine[Any, Any, str]:
    """A new workflow replaying ``workflow_id``'s steps before ``start_step`` (0 or 1:
    none) and re-running the rest, enqueued on ``queue_name`` (default: the internal queue); the
    new id. Step name ``DBOS.forkWorkflow``.

    Its id is ``forked_id``, else an enclosing ``SetWorkflowID``'s (taken at the call),
    else fresh; its timeout ``timeout_seconds``, else an enclosing
    ``SetWorkflowTimeout``'s. A missing original raises
    :class:`~dbos_trio.DBOSNonExistentWorkflowError`; the copy and the new row are one
    transaction."""
    validate.text(workflow_id, "workflow_id")
    # 0 is accepted, as by dbos 3.4: no step precedes it, so it forks as 1 does.
    start_step = max(validate.integer(start_step, "start_step", low=0, high=validate.INT32_MAX), 1)
    validate.optional_text(application_version, "application_version")
    validate.optional_text(queue_name, "queue_name")
    validate.optional_text(queue_partition_key, "queue_partition_key")
    validate.optional_seconds(timeout_seconds, "timeout_seconds", positive=True)
    validate.optional_text(forked_id, "forked_id")
    replacements = fork.check_replacement_children(replacement_children)
    runtime = reach.runtime("fork_workflow")
    # The id is the caller's at the call, like any start's.
    new_id = forked_id or take_assigned_id()

    async def create() -> str:
        return await fork.fork_workflow(
            runtime,
            workflow_id,
            start_step,
            application_version=application_version,
            queue_name=queue_name,
            queue_partition_key=queue_partition_key,
            replacement_children=replacements,
            forked_id=new_id,
            timeout_seconds=timeout_seconds,
        )

    return reach.checkpoint("DBOS.forkWorkflow", create)


def rewind_workflow(
    reach: Reach,
    workflow_id: str,
    *,
    start_step: int | None = None,
    application_version: str | None = None,
    queue_name: str | None = None,
    queue_partition_key: str | None = None,
) -> Coroutine[Any, Any, str]:
    """Re-run a terminal workflow under the same id from ``start_step`` (default 1),
    discarding its history from there and enqueueing it on ``queue_name`` (default: the
    internal queue); the id. An active workflow raises :class:`~dbos_trio.DBOSException`,
    a missing one :class:`~dbos_trio.DBOSNonExistentWorkflowError`, and nothing changes.
    Step name ``DBOS.rewindWorkflow``."""
    validate.text(workflow_id, "workflow_id")
    step = 1 if start_step is None else start_step
    validate.integer(step, "start_step", low=1, high=validate.INT32_MAX)
    validate.optional_text(application_version, "application_version")
    validate.optional_text(queue_name, "queue_name")
    validate.optional_text(queue_partition_key, "queue_partition_key")
    runtime = reach.runtime("rewind_workflow")

    async def rewind() -> None:
        await edit.rewind_workflow(
            runtime,
            workflow_id,
            step,
            application_version=application_version,
            queue_name=queue_name,
            queue_partition_key=queue_partition_key,
        )

    recorded = reach.checkpoint("DBOS.rewindWorkflow", rewind)

    async def rewound() -> str:
        await recorded
        return workflow_id

    return rewound()


def delete_workflows(
    reach: Reach,
    workflow_ids: Sequence[str],
    *,
    delete_children: bool = False,
    operation: str = "delete_workflows",
) -> Coroutine[Any, Any, None]:
    """Delete the listed workflows' rows (with ``delete_children``, their descendants'
    too): status, inputs, steps, messages, events and streams, in one transaction; a
    missing id is not an error. Step name ``DBOS.deleteWorkflow``."""
    ids = validate.texts(workflow_ids, "workflow_ids")
    validate.boolean(delete_children, "delete_children")
    runtime = reach.runtime(operation)

    async def delete() -> None:
        await management.delete_workflows(runtime, ids, delete_children=delete_children)

    return reach.checkpoint("DBOS.deleteWorkflow", delete)


def delete_workflow(
    reach: Reach, workflow_id: str, *, delete_children: bool = False
) -> Coroutine[Any, Any, None]:
    """:func:`delete_workflows` of one id."""
    validate.text(workflow_id, "workflow_id")
    return delete_workflows(
        reach, [workflow_id], delete_children=delete_children, operation="delete_workflow"
    )


def set_workflow_delay(
    reach: Reach,
    workflow_id: str,
    *,
    delay_seconds: float | None = None,
    delay_until_epoch_ms: int | None = None,
) -> Coroutine[Any, Any, None]:
    """Move a DELAYED workflow's start to ``delay_seconds`` from now, or to
    ``delay_until_epoch_ms`` (exactly one of them, else
    :class:`~dbos_trio.DBOSInvalidArgumentError`); other workflows are left alone. Step
    name ``DBOS.setWorkflowDelay``."""
    validate.text(workflow_id, "workflow_id")
    validate.optional_seconds(delay_seconds, "delay_seconds")
    validate.optional_integer(
        delay_until_epoch_ms, "delay_until_epoch_ms", low=0, high=MAX_EPOCH_MS
    )
    if (delay_seconds is None) == (delay_until_epoch_ms is None):
        raise DBOSInvalidArgumentError(
            "Specify either delay_seconds or delay_until_epoch_ms, not both"
        )
    runtime = reach.runtime("set_workflow_delay")

    async def delay() -> None:
        if delay_seconds is not None:
            await management.set_workflow_delay(runtime, workflow_id, delay_seconds)
        else:
            assert delay_until_epoch_ms is not None
            await runtime.sysdb.set_workflow_delay(
                workflow_id, delay_until_epoch_ms, runtime.clock.now_ms()
            )

    return reach.checkpoint("DBOS.setWorkflowDelay", delay)


def update_workflow_attributes(
    reach: Reach, workflow_id: str, attributes: dict[str, Any] | None, *, merge: bool = False
) -> Coroutine[Any, Any, None]:
    """Replace the workflow's attributes (None clears them) or, with ``merge=True``, set
    the given top-level keys and keep the others; a missing workflow is left alone.
    :class:`~dbos_trio.DBOSArgumentTypeError` for a value JSON cannot hold,
    :class:`~dbos_trio.DBOSException` for ``merge`` with None. Step name
    ``DBOS.updateWorkflowAttributes``."""
    validate.text(workflow_id, "workflow_id")
    validate.boolean(merge, "merge")
    if merge and attributes is None:
        raise DBOSException("Cannot merge None into workflow attributes")
    encoded = attributes_rules.workflow_attributes(attributes, "attributes")
    runtime = reach.runtime("update_workflow_attributes")

    async def update() -> None:
        await edit.update_workflow_attributes(runtime, workflow_id, encoded, merge=merge)

    return reach.checkpoint("DBOS.updateWorkflowAttributes", update)


def retry_workflow(
    reach: Reach,
    workflow_id: str,
    *,
    application_version: str | None = None,
    queue_name: str | None = None,
    forked_id: str | None = None,
) -> Coroutine[Any, Any, str]:
    """Run a failed (ERROR) workflow again from its first failed step: a fork that replays
    the steps before it and re-runs the rest, on ``application_version`` (default: the
    application's latest, where the fixed code runs) and ``queue_name`` (default: the
    internal queue); the new workflow's id. Step name ``DBOS.forkWorkflow``.

    The original stays as it was (ERROR, with its record); the fork's ``forked_from``
    names it. A workflow whose body failed outside any step re-runs from the step after its
    last one. One that is not ERROR raises :class:`~dbos_trio.DBOSException` saying what
    fits instead (``resume`` for a cancelled or parked one; nothing failed in a finished
    or running one); a missing one raises :class:`~dbos_trio.DBOSNonExistentWorkflowError`.
    """
    validate.text(workflow_id, "workflow_id")
    validate.optional_text(application_version, "application_version")
    validate.optional_text(queue_name, "queue_name")
    validate.optional_text(forked_id, "forked_id")
    runtime = reach.runtime("retry_workflow")
    new_id = forked_id or take_assigned_id()

    async def create() -> str:
        row = await runtime.sysdb.get_workflow(workflow_id)
        if row is None:
            raise DBOSNonExistentWorkflowError("target", workflow_id)
        if row.status != ERROR:
            raise DBOSException(_not_failed(workflow_id, row.status))
        steps = await runtime.sysdb.list_steps(workflow_id)
        failed = [s.function_id for s in steps if s.error is not None]
        start = min(failed) if failed else max((s.function_id for s in steps), default=0) + 1
        version = application_version
        if version is None:
            versions = await runtime.sysdb.list_application_versions(row.application_name)
            version = versions[0].version_name if versions else row.application_version
        return await fork.fork_workflow(
            runtime,
            workflow_id,
            start,
            application_version=version,
            queue_name=queue_name,
            forked_id=new_id,
        )

    return reach.checkpoint("DBOS.forkWorkflow", create)


def _not_failed(workflow_id: str, status: str) -> str:
    if status in (CANCELLED, MAX_RECOVERY_ATTEMPTS_EXCEEDED):
        return (
            f"workflow {workflow_id} is {status}, not ERROR: resume runs it on from its last "
            f"completed step (dbos-trio workflow resume {workflow_id})"
        )
    if status == SUCCESS:
        return (
            f"workflow {workflow_id} succeeded: there is no failed step to retry from (fork "
            f"runs it again from any step: dbos-trio workflow fork {workflow_id} --step N)"
        )
    return f"workflow {workflow_id} is {status}: it has not failed, so there is nothing to retry"
